/* Every callback is a poll, from the first to the last: the shortest libev program (one
 * repeating 1 ms ev_timer and nothing else, 300 callbacks, then the loop ends), recorded
 * through the adapter from d9_start to d9_stop. The trace holds exactly one poll per
 * callback, and the loop's first and last polls are the timer's. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/ev.h"

#define CALLS 300
#define LOOP_NAME "ev-every"

static int calls;

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    if (++calls == CALLS) ev_timer_stop(loop, w);
}

int main(void) {
    char *dir = at_mkdtemp("ev-every");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    struct ev_loop *loop = ev_loop_new(0);
    CHECK(loop != NULL);
    CHECK(d9_ev_instrument(loop, LOOP_NAME) == 0);
    CHECK(d9_start(&cfg) == 0);
    ev_timer timer;
    ev_timer_init(&timer, on_timer, 0.001, 0.001);
    ev_timer_start(loop, &timer);
    ev_run(loop, 0);
    d9_stop();
    CHECK_EQ_U64(calls, CALLS);

    at_trace t;
    const at_worker *w = at_check_run(&t, d9_run_dir(), LOOP_NAME, (pid_t)syscall(SYS_gettid));
    CHECK_EQ_U64(at_polls(&t, "on_timer", 0), CALLS);
    const char *first = "", *last = "";
    CHECK(at_first_last_polls(&t, w ? w->id : 255, &first, &last));
    CHECK_STR(first, "on_timer");
    CHECK_STR(last, "on_timer");
    at_free(&t);
    ev_loop_destroy(loop);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_ev_every_callback");
}
