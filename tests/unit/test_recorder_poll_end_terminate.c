/* d9_poll_end_terminate: a poll's end and its task's terminate right after it in one hook call,
 * at one clock read (the adapters' last callback of a request: adapters/common/thread_state.h).
 * Readers must see exactly what d9_poll_end then d9_task_terminate write: a PollEndEvent, then a
 * TaskTerminateEvent of the task, here at the same time. One run records iterations both ways
 * on one thread, so the two are compared event for event; some polls sleep inside (a switch:
 * the poll's end may add its PollCpuEvent, so the hook takes the two hooks' way, the terminate
 * after it). Both clocks, long enough to cross the ring's wrap point many times. While paused
 * it ends a poll begun while recording and records no terminate, as the two calls do. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "recorder_records_util.h"
#include "trace_files_util.h"

#define ITERATIONS 30000
#define TASK(i) (7000000 + (uint64_t)(i))
#define SLEEPY(i) ((i) % 5000 == 17) /* a switch inside the poll, past DIAL9_POLL_CPU_MIN_US */

static bool fused(uint64_t i) { return i % 3 != 0; }

typedef struct seen {
    rr_events ev; /* S task, E, T task, C (a PollCpuEvent); a = task, b = time */
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "PollStartEvent")) rr_add(&s->ev, 'S', d9t_field_u(ev, "task_id"), ev->ts_ns, 0, 0);
    else if (d9t_is(ev, "PollEndEvent")) rr_add(&s->ev, 'E', 0, ev->ts_ns, 0, 0);
    else if (d9t_is(ev, "TaskTerminateEvent")) rr_add(&s->ev, 'T', d9t_field_u(ev, "task_id"), ev->ts_ns, 0, 0);
    else if (d9t_is(ev, "PollCpuEvent")) rr_add(&s->ev, 'C', 0, 0, 0, 0);
}

static void *loop_thread(void *arg) {
    (void)arg;
    d9_worker_begin("poll_end_terminate", 0);
    d9_park(); /* the thread's task-clock page from here on (poll_cpu.h) */
    d9_unpark();
    for (uint64_t i = 0; i < ITERATIONS; i++) {
        if (i % 2048 == 0) d9_flush(); /* nothing dropped: every iteration is checked */
        d9_poll_begin(TASK(i), D9_HERE);
        if (SLEEPY(i)) usleep(3000);
        if (fused(i)) {
            d9_poll_end_terminate(TASK(i));
        } else {
            d9_poll_end();
            d9_task_terminate(TASK(i));
        }
    }
    d9_worker_end();
    return NULL;
}

static void record(d9_clock_mode clock) {
    const char *what = clock == D9_CLOCK_TSC ? "tsc" : "monotonic";
    char *dir = d9t_mkdtemp("poll-end-terminate");
    d9_config cfg;
    rr_config_hooks_only(&cfg, dir);
    cfg.clock = clock;
    CHECK(d9_start(&cfg) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, loop_thread, NULL) == 0);
    pthread_join(th, NULL);

    /* paused inside a poll: the end only, as d9_poll_end and d9_task_terminate would */
    d9_poll_begin(1, D9_HERE);
    d9_set_enabled(false);
    d9_poll_end_terminate(1);
    d9_poll_end_terminate(2); /* no poll open: nothing */
    d9_set_enabled(true);
    rr_stop_nothing_dropped();

    seen s = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    size_t bad_order = 0, bad_task = 0, bad_time = 0, cpu_events = 0, k = 0;
    for (uint64_t i = 0; i < ITERATIONS; i++) {
        if (k + 3 > s.ev.n) {
            bad_order++;
            break;
        }
        const rr_event *b = &s.ev.ev[k], *e = b + 1, *t = b + 2;
        if (t->kind == 'C') { /* its PollCpuEvent: between the end and the terminate */
            cpu_events++;
            t++;
            k++;
        }
        k += 3;
        bad_order += b->kind != 'S' || e->kind != 'E' || t->kind != 'T';
        bad_task += b->a != TASK(i) || t->a != TASK(i);
        bad_time += (fused(i) && !SLEEPY(i)) ? t->b != e->b : t->b < e->b;
        bad_time += e->b < b->b;
    }
    /* the paused poll's end, and nothing else */
    CHECK(k + 2 == s.ev.n && s.ev.ev[k].kind == 'S' && s.ev.ev[k].a == 1 && s.ev.ev[k + 1].kind == 'E');
    if (bad_order || bad_task || bad_time)
        printf("%s: %zu of %d iterations out of order, %zu with another task, %zu at other times\n", what,
               bad_order, ITERATIONS, bad_task, bad_time);
    printf("%s: %zu PollCpuEvents of %d sleeping polls\n", what, cpu_events, ITERATIONS / 5000);
    CHECK_EQ_U64(bad_order, 0);
    CHECK_EQ_U64(bad_task, 0);
    CHECK_EQ_U64(bad_time, 0);
    free(s.ev.ev);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    record(D9_CLOCK_TSC);
    record(D9_CLOCK_MONOTONIC);
    return d9t_summary("test_recorder_poll_end_terminate");
}
