/* A thread that registers between a drain's listing of the threads and its sources' collect
 * (the perf source reads the registry after marking its rings, so it keeps that thread's
 * switch records and stacks): its source events, later than its first records, must go out
 * after them and named by its worker (collector_merge.c, of_newer_thread). Before, they went
 * out in that drain, ahead of the thread's records and with worker 255: readers gave the first
 * switch of a new worker no worker at the sample, so its blocked time lost its stack's cause
 * (test_mt_attribution_planted under load: 12.7 ms of a read poll in blocked_other).
 *
 * Driven by hand, so the race happens every run: the collector is drained by this thread, and
 * the fake source's collect (called in the drain, after the listing) starts the thread, waits
 * for its first records (worker begin, poll start), then hands over a context-switch sample
 * and a switch-out of it, and an event of a thread that never registers (it must still come
 * out, one drain later: nothing waits twice). Checked in the decoded trace, in stream order. */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"
#include "core/collector.h"
#include "collector_rig_util.h"
#include "core/source.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

#define NEWCOMER_TASK 7
#define STRANGER_TID 1 /* init: never one of ours */

typedef struct newcomer {
    pthread_t th;
    _Atomic pid_t tid;
    uint32_t worker;
    sem_t recorded, finish;
} newcomer;

static void *newcomer_main(void *arg) {
    newcomer *n = arg;
    atomic_store(&n->tid, gettid());
    n->worker = d9__worker_begin("newcomer", 0);
    d9__poll_begin(NEWCOMER_TASK, D9_HERE);
    sem_post(&n->recorded);
    sem_wait(&n->finish);
    d9__poll_end();
    d9__worker_end();
    return NULL;
}

typedef struct fake {
    d9_source base;
    newcomer *n;
    int calls;
} fake;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fake_collect(d9_source *src, d9_src_batch *out) {
    fake *f = src->ctx;
    if (++f->calls != 3) return; /* a drain with the collector's list already taken */
    newcomer *n = f->n;
    CHECK(pthread_create(&n->th, NULL, newcomer_main, n) == 0);
    sem_wait(&n->recorded);
    uint64_t now = mono_ns(), frame = (uint64_t)(uintptr_t)&newcomer_main + 1;
    d9_src_event sample = {.ts_ns = now, .kind = D9_SRC_CPU_SAMPLE, .tid = (uint32_t)atomic_load(&n->tid), .cpu = 0};
    sample.sample.source = 1;
    sample.sample.nframes = 1;
    sample.sample.frames = &frame;
    d9_src_event out_sw = {.ts_ns = now + 1, .kind = D9_SRC_SWITCH, .tid = sample.tid, .cpu = 0};
    out_sw.sw.out = true;
    d9_src_event stranger = {.ts_ns = now + 2, .kind = D9_SRC_SWITCH, .tid = STRANGER_TID, .cpu = 1};
    stranger.sw.out = true;
    CHECK(d9_src_batch_add(out, &sample));
    CHECK(d9_src_batch_add(out, &out_sw));
    CHECK(d9_src_batch_add(out, &stranger));
}

static void fake_close(d9_source *src) { (void)src; }

/* What the trace says, in stream order (the index of each event in the run). */
typedef struct seen {
    uint32_t tid;
    uint64_t index, worker;
    uint64_t registered_at, poll_at; /* the newcomer's records; UINT64_MAX: not seen */
    uint64_t sample_at, sample_worker, switch_at, switch_worker;
    int strangers;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    uint64_t at = s->index++;
    if (d9t_is(ev, "WorkerRegisteredEvent") && d9t_field_u(ev, "tid") == s->tid) {
        s->registered_at = at;
        s->worker = d9t_field_u(ev, "worker_id");
    } else if (d9t_is(ev, "PollStartEvent") && d9t_field_u(ev, "task_id") == NEWCOMER_TASK) {
        s->poll_at = at;
    } else if (d9t_is(ev, "CpuSampleEvent") && d9t_field_u(ev, "tid") == s->tid) {
        s->sample_at = at;
        s->sample_worker = d9t_field_u(ev, "worker_id");
    } else if (d9t_is(ev, "SchedSwitchEvent") && d9t_field_u(ev, "tid") == s->tid) {
        s->switch_at = at;
        s->switch_worker = d9t_field_u(ev, "worker_id");
    } else if (d9t_is(ev, "SchedSwitchEvent") && d9t_field_u(ev, "tid") == STRANGER_TID) {
        s->strangers++;
    }
}

int main(void) {
    static tc_rig rig;
    tc_rig_init(&rig, "newthread");
    newcomer n = {0};
    sem_init(&n.recorded, 0, 0);
    sem_init(&n.finish, 0, 0);
    fake f = {.base = {.name = "fake", .collect = fake_collect, .close = fake_close}, .n = &n};
    f.base.ctx = &f;
    d9_collector *col = tc_rig_open(&rig, "run1", "newthread", &f.base);
    if (!col) return d9t_summary("collector_new_thread_source");
    tc_rig_start(&rig);
    for (int i = 0; i < 6; i++) d9_collector_drain(col);
    sem_post(&n.finish);
    pthread_join(n.th, NULL);
    d9_collector_drain(col);
    tc_rig_close(&rig);

    seen s = {.tid = (uint32_t)atomic_load(&n.tid), .worker = UINT64_MAX, .registered_at = UINT64_MAX,
              .poll_at = UINT64_MAX, .sample_at = UINT64_MAX, .switch_at = UINT64_MAX};
    CHECK(d9t_decode_run(rig.run_dir, on_event, &s) == 0);
    printf("newcomer tid %u worker %u: registered at #%" PRIu64 ", poll start #%" PRIu64
           ", sample #%" PRIu64 " (worker %" PRIu64 "), switch-out #%" PRIu64 " (worker %" PRIu64
           "), stranger switches %d\n",
           s.tid, n.worker, s.registered_at, s.poll_at, s.sample_at, s.sample_worker, s.switch_at,
           s.switch_worker, s.strangers);
    CHECK(s.registered_at != UINT64_MAX && s.poll_at != UINT64_MAX);
    CHECK(s.sample_at != UINT64_MAX && s.switch_at != UINT64_MAX);
    /* after the thread's own earlier records, and its worker's */
    CHECK(s.sample_at > s.poll_at);
    CHECK(s.switch_at > s.poll_at);
    CHECK_EQ_U64(s.sample_worker, n.worker);
    CHECK_EQ_U64(s.switch_worker, n.worker);
    CHECK_EQ_U64(s.worker, n.worker);
    CHECK_EQ_U64((uint64_t)s.strangers, 1); /* held once, then written */
    tc_rig_finish(&rig);
    return d9t_summary("collector_new_thread_source");
}
