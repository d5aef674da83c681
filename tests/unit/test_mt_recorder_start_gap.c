/* A thread that becomes a worker while d9_start is between its thread snapshot and the moment
 * hooks begin to record is still that worker in the trace. The start hook
 * (d9__on_recording_start) runs exactly in that gap, so it forces the interleaving without any
 * sleep: two threads call d9_worker_begin there, one known to the snapshot and one registering
 * only then, and both poll once recording is on. Every poll must carry its thread's worker id
 * and each worker must be registered. (Before the fix both polls had worker 255: the first
 * thread's WORKER_BEGIN was never written, the second's "first sight" needed an empty ring.) */
#include <pthread.h>
#include <semaphore.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

enum { KNOWN, LATE, NTHREADS };
static const uint64_t k_task[NTHREADS] = {11, 22};

static sem_t g_registered;      /* KNOWN has its buffer (before d9_start) */
static sem_t g_go[NTHREADS];    /* the start hook lets the thread call d9_worker_begin */
static sem_t g_began;           /* ... and waits for both to have done so */
static sem_t g_recording;       /* d9_start returned: poll */
static uint32_t g_wid[NTHREADS];
static pid_t g_tid[NTHREADS];

static void in_start_gap(void) {
    for (int i = 0; i < NTHREADS; i++) sem_post(&g_go[i]);
    for (int i = 0; i < NTHREADS; i++) sem_wait(&g_began);
}

static void *worker(void *arg) {
    int me = (int)(uintptr_t)arg;
    g_tid[me] = gettid();
    if (me == KNOWN) {
        /* Registers this thread's buffer now, so it is in d9_start's snapshot. */
        d9_worker_begin("gap-warmup", 0);
        d9_worker_end();
        sem_post(&g_registered);
    }
    sem_wait(&g_go[me]);
    g_wid[me] = d9_worker_begin("gap", (uint32_t)me);
    sem_post(&g_began);
    sem_wait(&g_recording);
    d9_poll_begin(k_task[me], D9_HERE);
    d9_poll_end();
    d9_worker_end();
    return NULL;
}

typedef struct seen {
    int polls[NTHREADS], polls_as_worker[NTHREADS], registered[NTHREADS];
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    for (int i = 0; i < NTHREADS; i++) {
        if (d9t_is(ev, "PollStartEvent") && d9t_field_u(ev, "task_id") == k_task[i]) {
            s->polls[i]++;
            if (d9t_field_u(ev, "worker_id") == g_wid[i]) s->polls_as_worker[i]++;
        }
        if (d9t_is(ev, "WorkerRegisteredEvent") && d9t_field_u(ev, "worker_id") == g_wid[i] &&
            d9t_field_u(ev, "tid") == (uint64_t)g_tid[i])
            s->registered[i]++;
    }
}

int main(void) {
    char *dir = d9t_mkdtemp("start_gap");
    sem_init(&g_registered, 0, 0);
    sem_init(&g_began, 0, 0);
    sem_init(&g_recording, 0, 0);
    for (int i = 0; i < NTHREADS; i++) sem_init(&g_go[i], 0, 0);
    d9__on_recording_start(in_start_gap);

    pthread_t th[NTHREADS];
    for (uintptr_t i = 0; i < NTHREADS; i++) CHECK(pthread_create(&th[i], NULL, worker, (void *)i) == 0);
    sem_wait(&g_registered);

    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedule_profile = false;
    cfg.flush_ms = 60000; /* no drain before d9_stop: the polls share the ring with what precedes them */
    CHECK(d9_start(&cfg) == 0);
    for (int i = 0; i < NTHREADS; i++) sem_post(&g_recording);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    d9_stop();

    seen s = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    for (int i = 0; i < NTHREADS; i++) {
        printf("%s thread: worker %u, %d poll(s), %d as that worker, registered %d time(s)\n",
               i == KNOWN ? "known" : "late", g_wid[i], s.polls[i], s.polls_as_worker[i], s.registered[i]);
        CHECK(g_wid[i] < 254);
        CHECK_EQ_U64(s.polls[i], 1);
        CHECK_EQ_U64(s.polls_as_worker[i], 1);
        CHECK(s.registered[i] >= 1);
    }
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_start_gap");
}
