/* Every callback is a poll, from the first to the last: the shortest libevent program (one
 * persistent 1 ms timer event and nothing else, 300 callbacks, then the loop ends), recorded
 * through the adapter from d9_start to d9_stop. The trace holds exactly one poll per
 * callback, and the base's first and last polls are the timer's. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/event.h"

#define CALLS 300
#define LOOP_NAME "event-every"

static int calls;
static struct event *timer;

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
    if (++calls == CALLS) event_del(timer);
}

int main(void) {
    char *dir = at_mkdtemp("event-every");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    struct event_base *base = event_base_new();
    CHECK(base != NULL);
    CHECK(d9_event_instrument(base, LOOP_NAME) == 0);
    CHECK(d9_start(&cfg) == 0);
    timer = event_new(base, -1, EV_PERSIST, on_timer, NULL);
    struct timeval every = {0, 1000};
    CHECK(timer && event_add(timer, &every) == 0);
    event_base_dispatch(base);
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
    event_free(timer);
    event_base_free(base);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_event_every_callback");
}
