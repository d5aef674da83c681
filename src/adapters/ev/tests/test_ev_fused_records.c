/* The libev loop's turns as the adapter records them since they share records: two io watchers
 * on pipes that stay readable, so every turn libev parks in its backend, returns both fds ready,
 * feeds both watchers and calls both callbacks. Per turn the trace holds what it held before,
 * Park, Unpark, a readiness wake of each watcher's task, a poll of each, and the next Park; what
 * fusing changed is when:
 *   - the last callback's poll ends at the loop's next park, in one record with it
 *     (d9__poll_end_park): its PollEnd is at its Park's time, exactly;
 *   - the unpark is written with the first ready wake (d9_unpark_wake_ready) when libev feeds
 *     that watcher: both wakes are at their Unpark's time, exactly, and come before the polls.
 * The poll end's check fails on the adapter before (the end at the callback's return, a clock
 * read of its own); the unpark's fusion shows in the hooks' count
 * (test_ev_adapter_instructions.sh, the all-in bound). A timer-only turn (no io ready: the owed
 * unpark paid by the timer callback's poll) closes the run. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/ev.h"

#define TURNS 200
#define LOOP_NAME "ev-fused"

static int calls_a, calls_b, timer_calls;
static ev_io io_a, io_b;
static ev_timer timer;

static void on_a(struct ev_loop *loop, ev_io *w, int revents) {
    (void)revents;
    if (++calls_a == TURNS) ev_io_stop(loop, w);
}

static void on_b(struct ev_loop *loop, ev_io *w, int revents) {
    (void)revents;
    if (++calls_b == TURNS) {
        ev_io_stop(loop, w);
        ev_timer_start(loop, &timer); /* one more turn: a timer alone */
    }
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)w, (void)revents;
    timer_calls++;
}

/* The park of worker `w` that begins at or after `ns` (NULL: none). */
static const at_park *park_at_or_after(const at_trace *t, uint32_t w, uint64_t ns) {
    const at_park *best = NULL;
    for (size_t i = 0; i < t->nparks; i++) {
        const at_park *p = &t->parks[i];
        if (p->worker == w && p->park_ns >= ns && (!best || p->park_ns < best->park_ns)) best = p;
    }
    return best;
}

/* The last park of worker `w` that ended (unparked) at or before `ns` (NULL: none). */
static const at_park *unpark_at_or_before(const at_trace *t, uint32_t w, uint64_t ns) {
    const at_park *best = NULL;
    for (size_t i = 0; i < t->nparks; i++) {
        const at_park *p = &t->parks[i];
        if (p->worker == w && p->unpark_ns && p->unpark_ns <= ns && (!best || p->unpark_ns > best->unpark_ns))
            best = p;
    }
    return best;
}

int main(void) {
    char *dir = at_mkdtemp("ev-fused");
    CHECK(dir != NULL);
    int pa[2], pb[2];
    CHECK(pipe(pa) == 0 && pipe(pb) == 0);
    CHECK(write(pa[1], "a", 1) == 1 && write(pb[1], "b", 1) == 1); /* readable for good */
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.clock = D9_CLOCK_MONOTONIC; /* ns apart: two clock reads are never one time */
    struct ev_loop *loop = ev_loop_new(EVBACKEND_EPOLL);
    CHECK(loop != NULL);
    CHECK(d9_ev_instrument(loop, LOOP_NAME) == 0);
    CHECK(d9_start(&cfg) == 0);
    ev_io_init(&io_a, on_a, pa[0], EV_READ);
    ev_io_init(&io_b, on_b, pb[0], EV_READ);
    ev_timer_init(&timer, on_timer, 0.001, 0.);
    ev_io_start(loop, &io_a);
    ev_io_start(loop, &io_b);
    ev_run(loop, 0);
    d9_stop();
    CHECK_EQ_U64(calls_a, TURNS);
    CHECK_EQ_U64(calls_b, TURNS);
    CHECK_EQ_U64(timer_calls, 1);

    at_trace t;
    const at_worker *w = at_check_run(&t, d9_run_dir(), LOOP_NAME, (pid_t)syscall(SYS_gettid));
    uint32_t wid = w ? w->id : 255;
    CHECK_EQ_U64(at_polls(&t, "on_a", 0), TURNS);
    CHECK_EQ_U64(at_polls(&t, "on_b", 0), TURNS);
    CHECK_EQ_U64(at_polls(&t, "on_timer", 0), 1);
    /* the turn's last poll ends at its park's time (but the last turn's: its watchers stopped,
     * their terminates come between) */
    size_t ends_at_park = 0, ends_apart = 0, last_polls = 0;
    for (size_t i = 0; i < t.npolls; i++) {
        const at_poll *p = &t.polls[i];
        if (p->worker != wid || p->task == 0) continue;
        const at_park *k = park_at_or_after(&t, wid, p->end_ns);
        bool last = k != NULL;
        for (size_t j = 0; last && j < t.npolls; j++) /* another poll between it and the park */
            last = !(t.polls[j].worker == wid && t.polls[j].start_ns >= p->end_ns &&
                     t.polls[j].start_ns < k->park_ns && j != i);
        for (size_t j = 0; last && j < t.nterminates; j++) /* its task ends after it: not owed */
            last = !(t.terminates[j].task == p->task && t.terminates[j].ts_ns >= p->end_ns &&
                     t.terminates[j].ts_ns <= k->park_ns);
        if (!last) continue;
        last_polls++;
        if (k->park_ns == p->end_ns) ends_at_park++;
        else ends_apart++;
    }
    if (ends_apart) printf("%zu of %zu turns' last polls end before their park\n", ends_apart, last_polls);
    CHECK(last_polls >= TURNS - 1);
    CHECK_EQ_U64(ends_apart, 0);
    CHECK_EQ_U64(ends_at_park, last_polls);
    /* each watcher's readiness wake per turn, at its unpark's time, before the polls */
    uint64_t task_a = at_task(&t, &io_a), task_b = at_task(&t, &io_b);
    size_t wakes = 0, wakes_off_unpark = 0;
    for (size_t i = 0; i < t.nwakes; i++) {
        const at_wake *k = &t.wakes[i];
        if (k->waker != 0 || (k->woken != task_a && k->woken != task_b)) continue;
        wakes++;
        const at_park *u = unpark_at_or_before(&t, wid, k->ts_ns);
        if (!u || u->unpark_ns != k->ts_ns) wakes_off_unpark++;
    }
    CHECK_EQ_U64(wakes, 2 * TURNS);
    CHECK_EQ_U64(wakes_off_unpark, 0);
    const char *const io_locs[] = {"on_a", "on_b"};
    at_check_wakes(&t, io_locs, 2);
    at_free(&t);
    ev_loop_destroy(loop);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_ev_fused_records");
}
