/* d9__poll_end_park: a poll's end and the park right after it in one hook call, at one clock
 * read (the adapters' loop poll, where the last callback's end is owed to the park:
 * adapters/common/thread_state.h). Readers must see exactly what d9_poll_end then d9_park write:
 * a PollEndEvent, then a WorkerParkEvent, here at the same time. One run records iterations
 * both ways on one thread, so the two are compared event for event: per iteration PollStart,
 * PollEnd, WorkerPark, WorkerUnpark with the same values (worker, task, location, local queue,
 * thread, the CPU time never going back); the fused iterations' end and park at one time, the
 * split ones' park not before their end. Both clocks, the CPU time from the task-clock page
 * and by system call; long enough to cross the ring's wrap point many times (the hook's room
 * test then fails and it takes the two hooks). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dial9/dial9.h"
#include "recorder_records_util.h"
#include "trace_files_util.h"

#define ITERATIONS 40000
#define TASK(i) (5000000 + (uint64_t)(i))

static bool fused(uint64_t i) { return i % 3 != 0; }

static uint32_t g_worker;

static void *loop_thread(void *arg) {
    (void)arg;
    g_worker = d9_worker_begin("poll_end_park", 0);
    for (uint64_t i = 0; i < ITERATIONS; i++) {
        if (i % 2048 == 0) d9_flush(); /* nothing dropped: every iteration is checked */
        d9_set_local_queue((uint32_t)(i % 5));
        d9_poll_begin(TASK(i), D9_HERE);
        if (fused(i)) {
            d9__poll_end_park(); /* the adapters call it with recording on (tested before) */
        } else {
            d9_poll_end();
            d9_park();
        }
        d9_unpark();
    }
    d9_worker_end();
    return NULL;
}

static void record(d9_clock_mode clock, const char *thread_cpu) {
    const char *what = clock == D9_CLOCK_TSC ? "tsc" : "monotonic";
    rr_hook_events s;
    char *dir = rr_record_hook_thread("poll-end-park", clock, thread_cpu, loop_thread, &g_worker, &s);
    if (s.n != 4 * (size_t)ITERATIONS)
        printf("%s, %s: %zu events of the worker, want %d\n", what, thread_cpu, s.n, 4 * ITERATIONS);
    CHECK_EQ_U64(s.n, 4 * (uint64_t)ITERATIONS);

    size_t bad_kind = 0, bad_value = 0, bad_time = 0;
    uint64_t tid = 0, loc = 0, last_cpu = 0;
    for (uint64_t i = 0; i < ITERATIONS && 4 * i + 4 <= s.n; i++) {
        const rr_hook_event *b = &s.r[4 * i], *e = b + 1, *p = b + 2, *u = b + 3;
        bad_kind += b->kind != 'S' || e->kind != 'E' || p->kind != 'P' || u->kind != 'U';
        if (i == 0) tid = p->tid, loc = b->loc;
        bad_value += b->task != TASK(i) || b->loc != loc || loc == 0 || b->queue != i % 5;
        bad_value += p->queue != i % 5 || u->queue != i % 5 || p->tid != tid || u->tid != tid;
        bad_value += p->cpu < last_cpu || u->cpu < p->cpu; /* the thread's CPU time never goes back */
        last_cpu = u->cpu;
        bool wrong_time = fused(i) ? p->ts != e->ts : p->ts < e->ts;
        wrong_time |= e->ts < b->ts || u->ts < p->ts;
        if (wrong_time && bad_time < 5)
            printf("%s, %s: iteration %llu (%s): start %llu, end %llu, park %llu, unpark %llu\n", what, thread_cpu,
                   (unsigned long long)i, fused(i) ? "one call" : "two calls", (unsigned long long)b->ts,
                   (unsigned long long)e->ts, (unsigned long long)p->ts, (unsigned long long)u->ts);
        bad_time += wrong_time;
    }
    CHECK_EQ_U64(bad_kind, 0);
    CHECK_EQ_U64(bad_value, 0);
    CHECK_EQ_U64(bad_time, 0);
    free(s.r);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    record(D9_CLOCK_TSC, "auto");
    record(D9_CLOCK_MONOTONIC, "auto");
    record(D9_CLOCK_MONOTONIC, "syscall");
    return d9t_summary("test_recorder_poll_end_park");
}
