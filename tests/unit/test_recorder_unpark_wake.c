/* d9_unpark_wake_ready: an unpark and the readiness wake of the first task its poller returned,
 * in one call and one ring record. Readers must see exactly what d9_unpark then d9_wake_ready
 * write: a WorkerUnparkEvent, then the WakeEvent (waker 0, the task, the worker) at the same
 * time. One run records iterations both ways on one thread, so the two are compared event for
 * event: per iteration the same events in the same order with the same values (the times and
 * the CPU times are the run's own; the wakes' time is their unpark's), on both clocks and with
 * the CPU time from the task-clock page or by system call (the hook's general path).
 * Long enough to cross the ring's wrap point many times (the hook's room test then fails and
 * it takes its general path). While paused only the unpark of a recorded park is kept, and no
 * wake, as with the two calls. And with a ring too small for the run, both ways count every
 * event they could not keep: recorded + dropped is the same (two drops for the one record). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dial9/dial9.h"
#include "recorder_records_util.h"
#include "trace_files_util.h"

#define ITERATIONS 40000
#define TASK_A(i) (1000000 + 2 * (uint64_t)(i))
#define TASK_B(i) (1000001 + 2 * (uint64_t)(i))

/* How iteration i ends its park: 0 the two calls, 1 and 3 the one call, 2 the one call with
 * no task ready (a plain unpark); a second ready task (B) unless i is a multiple of 3. */
static unsigned way(uint64_t i) { return (unsigned)(i & 3); }
static bool has_b(uint64_t i) { return i % 3 != 0; }

static uint32_t g_worker;

static void *loop_thread(void *arg) {
    (void)arg;
    g_worker = d9_worker_begin("unpark_wake", 0);
    for (uint64_t i = 0; i < ITERATIONS; i++) {
        if (i % 2048 == 0) d9_flush(); /* nothing dropped: every iteration is checked */
        d9_set_local_queue((uint32_t)(i % 7));
        d9_park();
        switch (way(i)) {
        case 0:
            d9_unpark();
            d9_wake_ready(TASK_A(i));
            break;
        case 2: d9_unpark_wake_ready(0); break;
        default: d9_unpark_wake_ready(TASK_A(i)); break;
        }
        if (has_b(i)) d9_wake_ready(TASK_B(i));
    }
    /* paused while parked: the unpark is owed, the wakes are not recorded; both ways */
    d9_park();
    d9_set_enabled(false);
    d9_unpark_wake_ready(7);
    d9_wake_ready(8);
    d9_set_enabled(true);
    d9_park();
    d9_set_enabled(false);
    d9_unpark();
    d9_wake_ready(9);
    d9_set_enabled(true);
    d9_worker_end();
    return NULL;
}

static void record(d9_clock_mode clock, const char *thread_cpu) {
    const char *what = clock == D9_CLOCK_TSC ? "tsc" : "monotonic";
    rr_hook_events s;
    char *dir = rr_record_hook_thread("unpark-wake", clock, thread_cpu, loop_thread, &g_worker, &s);
    size_t want = 0;
    for (uint64_t i = 0; i < ITERATIONS; i++) want += 2 + (way(i) != 2) + has_b(i);
    want += 4; /* the paused ones: park, unpark, park, unpark */
    if (s.n != want) printf("%s, %s: %zu events of the worker, want %zu\n", what, thread_cpu, s.n, want);
    CHECK_EQ_U64(s.n, want);

    size_t at = 0, bad_kind = 0, bad_value = 0, bad_time = 0;
    uint64_t tid = s.n ? s.r[0].tid : 0, last_cpu = 0;
    for (uint64_t i = 0; i < ITERATIONS && at + 2 <= s.n; i++) {
        const rr_hook_event *p = &s.r[at++], *u = &s.r[at++];
        bad_kind += p->kind != 'P' || u->kind != 'U';
        bad_value += p->queue != i % 7 || u->queue != i % 7 || p->tid != tid || u->tid != tid;
        bad_value += p->cpu < last_cpu || u->cpu < p->cpu; /* the thread's CPU time never goes back */
        last_cpu = u->cpu;
        uint64_t tasks[2];
        size_t nt = 0;
        if (way(i) != 2) tasks[nt++] = TASK_A(i);
        if (has_b(i)) tasks[nt++] = TASK_B(i);
        for (size_t k = 0; k < nt && at < s.n; k++) {
            const rr_hook_event *w = &s.r[at++];
            bad_kind += w->kind != 'W';
            bad_value += w->waker != 0 || w->woken != tasks[k];
            if (w->ts != u->ts && bad_time < 5)
                printf("iteration %llu (way %u): unpark at %llu, wake %zu at %llu\n", (unsigned long long)i, way(i),
                       (unsigned long long)u->ts, k, (unsigned long long)w->ts);
            bad_time += w->ts != u->ts; /* stamped when the poller returned */
        }
    }
    CHECK_EQ_U64(bad_kind, 0);
    CHECK_EQ_U64(bad_value, 0);
    CHECK_EQ_U64(bad_time, 0);
    if (s.n == want) { /* paused: each park's unpark, no wake */
        const rr_hook_event *m = &s.r[want - 4];
        CHECK(m[0].kind == 'P' && m[1].kind == 'U' && m[2].kind == 'P' && m[3].kind == 'U');
    }
    free(s.r);
    d9t_rm_rf(dir);
    free(dir);
}

/* A ring too small for the run, never flushed: the events the buffer had no room for are
 * dropped and counted, two for an unpark with its wake in one record, so that recorded + dropped
 * is every event the program made, either way. */
#define DROP_ITERATIONS 50000
static bool g_one_call;

static void *dropping_thread(void *arg) {
    (void)arg;
    d9_worker_begin("unpark_wake_drops", 0);
    for (uint64_t i = 0; i < DROP_ITERATIONS; i++) {
        d9_park();
        if (g_one_call) {
            d9_unpark_wake_ready(TASK_A(i));
        } else {
            d9_unpark();
            d9_wake_ready(TASK_A(i));
        }
    }
    d9_worker_end();
    return NULL;
}

static uint64_t drops_run(bool one_call, const char *thread_cpu, uint64_t *dropped) {
    setenv("DIAL9_THREAD_CPU", thread_cpu, 1);
    char *dir = d9t_mkdtemp("unpark-wake-drops");
    d9_config cfg;
    rr_config_hooks_only(&cfg, dir);
    cfg.buffer_kb = 64;
    cfg.flush_ms = 10000; /* the collector drains at d9_stop: the ring fills, events drop */
    CHECK(d9_start(&cfg) == 0);
    g_one_call = one_call;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, dropping_thread, NULL) == 0);
    pthread_join(th, NULL);
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    d9t_rm_rf(dir);
    free(dir);
    *dropped = st.events_dropped;
    return st.events_recorded + st.events_dropped;
}

static void drops(const char *thread_cpu) {
    uint64_t dropped_split, dropped_one;
    uint64_t split = drops_run(false, thread_cpu, &dropped_split);
    uint64_t one = drops_run(true, thread_cpu, &dropped_one);
    printf("%s: recorded + dropped %llu (dropped %llu) as two calls, %llu (dropped %llu) as one\n", thread_cpu,
           (unsigned long long)split, (unsigned long long)dropped_split, (unsigned long long)one,
           (unsigned long long)dropped_one);
    CHECK_EQ_U64(one, split);
    CHECK(dropped_one > 0 && dropped_split > 0); /* 450 000 words into a 64 KiB ring, no drain */
}

int main(void) {
    drops("auto");
    drops("syscall");
    record(D9_CLOCK_TSC, "auto");
    record(D9_CLOCK_MONOTONIC, "auto");
    record(D9_CLOCK_MONOTONIC, "syscall");
    return d9t_summary("test_recorder_unpark_wake");
}
