/* d9_poll_end_terminate: a poll's end and its task's terminate right after it in one hook call,
 * at one clock read (the adapters' last callback of a request: adapters/common/thread_state.h),
 * and d9__poll_end_terminate_park, the same and the park after them. Readers must see exactly
 * what d9_poll_end, d9_task_terminate (and d9_park) write: a PollEndEvent, a TaskTerminateEvent
 * of the task (and a WorkerParkEvent), here at the same time (the park later only where its
 * schedstat read was due: that read comes first). One run records iterations all three ways on
 * one thread, so they are compared event for event; some polls sleep inside (a switch: the
 * poll's end may add its PollCpuEvent, between the end and the terminate, at that time too).
 * Both clocks, long enough to cross the ring's wrap point many times. While paused it ends a
 * poll begun while recording and records no terminate, as the two calls do. */
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
static bool parks(uint64_t i) { return i % 3 == 2; } /* d9__poll_end_terminate_park, then an unpark */

typedef struct seen {
    rr_events ev; /* S task, E, T task, C (a PollCpuEvent), P, U (park, unpark); a = task, b = time */
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "PollStartEvent")) rr_add(&s->ev, 'S', d9t_field_u(ev, "task_id"), ev->ts_ns, 0, 0);
    else if (d9t_is(ev, "PollEndEvent")) rr_add(&s->ev, 'E', 0, ev->ts_ns, 0, 0);
    else if (d9t_is(ev, "TaskTerminateEvent")) rr_add(&s->ev, 'T', d9t_field_u(ev, "task_id"), ev->ts_ns, 0, 0);
    else if (d9t_is(ev, "PollCpuEvent")) rr_add(&s->ev, 'C', 0, 0, 0, 0);
    else if (d9t_is(ev, "WorkerParkEvent")) rr_add(&s->ev, 'P', 0, ev->ts_ns, 0, 0);
    else if (d9t_is(ev, "WorkerUnparkEvent")) rr_add(&s->ev, 'U', 0, ev->ts_ns, 0, 0);
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
        if (parks(i)) {
            d9__poll_end_terminate_park(TASK(i)); /* the adapters call it with recording on */
            d9_unpark();
        } else if (fused(i)) {
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
    size_t bad_order = 0, bad_task = 0, bad_time = 0, cpu_events = 0, k = 2; /* after the first park, unpark */
    CHECK(s.ev.n > 2 && s.ev.ev[0].kind == 'P' && s.ev.ev[1].kind == 'U');
    for (uint64_t i = 0; i < ITERATIONS; i++) {
        size_t want = parks(i) ? 5 : 3;
        if (k + want > s.ev.n) {
            bad_order++;
            break;
        }
        const rr_event *b = &s.ev.ev[k], *e = b + 1, *t = b + 2;
        if (t->kind == 'C') { /* its PollCpuEvent: between the end and the terminate */
            cpu_events++;
            t++;
            k++;
        }
        k += want;
        bad_order += b->kind != 'S' || e->kind != 'E' || t->kind != 'T';
        bad_task += b->a != TASK(i) || t->a != TASK(i);
        bad_time += fused(i) ? t->b != e->b : t->b < e->b;
        bad_time += e->b < b->b;
        if (parks(i)) {
            const rr_event *p = t + 1, *u = t + 2;
            bad_order += p->kind != 'P' || u->kind != 'U';
            bad_time += p->b < t->b || u->b < p->b;
        }
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
