/* Context-switch samples of a worker that begins and ends between two drains: a thread
 * becomes a worker, waits five times for a mutex another thread holds, ends as a worker and
 * exits, all while the collector sleeps (flush_ms 60 s: the drain at d9_stop reads it all).
 * Each of its polls must carry a context-switch sample (CpuSampleEvent source 1). The perf
 * source once judged "worker" by the registry's worker id at the drain, 255 again by then,
 * and dropped every sample of such a worker (test_mt_source_offcpu lost all 20 of its lock
 * polls' samples so in a soak, its collector starved at load 45). The holder unlocks only
 * once the worker sleeps on the mutex (tt_wait_blocked_in), so each poll blocks. */
#include <sys/syscall.h>
#include <semaphore.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define POLLS 5

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static sem_t g_held, g_done; /* the holder has the mutex / the worker got it */
static _Atomic pid_t g_worker_tid;

static void *holder(void *arg) {
    (void)arg;
    for (int i = 0; i < POLLS; i++) {
        pthread_mutex_lock(&g_mutex);
        sem_post(&g_held);
        while (!atomic_load(&g_worker_tid)) tt_sleep_ns(1000000);
        CHECK(tt_wait_blocked_in(atomic_load(&g_worker_tid), SYS_futex, (uint64_t)(uintptr_t)&g_mutex));
        pthread_mutex_unlock(&g_mutex);
        sem_wait(&g_done);
    }
    return NULL;
}

static void *short_worker(void *arg) {
    (void)arg;
    d9_worker_begin("short", 0);
    g_worker_tid = gettid();
    for (int i = 0; i < POLLS; i++) {
        sem_wait(&g_held);
        d9_poll_begin(3000 + (uint64_t)i, D9_HERE);
        pthread_mutex_lock(&g_mutex);
        pthread_mutex_unlock(&g_mutex);
        d9_poll_end();
        sem_post(&g_done);
    }
    d9_worker_end();
    return NULL;
}

int main(void) {
    sem_init(&g_held, 0, 0);
    sem_init(&g_done, 0, 0);
    char *dir = d9t_mkdtemp("short-worker");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 60000; /* no drain while the worker lives */
    cfg.overhead_budget_pct = 0; /* every record: the cost governor is test_mt_source_governor's */
    cfg.switch_stacks_per_sec = 1000000; /* every stack: pacing is not what this test checks */
    CHECK(d9_start(&cfg) == 0);

    pthread_t h, w;
    pthread_create(&h, NULL, holder, NULL);
    pthread_create(&w, NULL, short_worker, NULL);
    pthread_join(w, NULL);
    pthread_join(h, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    const char *stacks = tt_meta(&t, "source.switch_stacks");
    printf("source.off_cpu = %s\nsource.switch_stacks = %s\n", off, stacks);
    if (tt_starts_with(off, "inactive: perf refused") || !tt_starts_with(stacks, "active")) {
        CHECK(tt_starts_with(stacks, "inactive: "));
        printf("SKIP: no context-switch stacks on this host: %s\n", stacks);
    } else {
        uint32_t wk = tt_worker_of(&t, g_worker_tid);
        CHECK(wk != 255);
        int polls = 0, with_sample = 0;
        for (size_t i = 0; i < t.npolls; i++) {
            const tt_poll *p = &t.polls[i];
            if (p->worker != wk) continue;
            polls++;
            bool sample = false;
            for (size_t j = 0; j < t.nsamples; j++) {
                const tt_sample *s = &t.samples[j];
                sample |= s->source == 1 && s->tid == (uint32_t)g_worker_tid && s->ts >= p->start && s->ts <= p->end;
            }
            with_sample += sample;
        }
        printf("short worker's polls: %d, with a context-switch sample: %d\n", polls, with_sample);
        CHECK_EQ_U64(polls, POLLS);
        CHECK_EQ_U64(with_sample, POLLS);
    }
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("source_stacks_short_worker");
}
