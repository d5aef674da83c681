/* The libevent adapter's per-callback cost, for callgrind (test_event_adapter_instructions.sh):
 * one persistent read event on a pipe that stays readable, so every loop turn dispatches its
 * callback once through the adapter's trampoline, N times while recording, then the loop
 * ends. Prints "callbacks N" and the trace's run directory. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dial9/event.h"

static long calls, wanted;
static struct event *ready;

void d9e_counted_callback(evutil_socket_t fd, short what, void *arg);

/* noinline and named: the test leaves the application's own instructions out by this name */
__attribute__((noinline)) void d9e_counted_callback(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    if (++calls == wanted) event_del(ready);
    __asm__ volatile("" ::"r"(arg) : "memory");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CALLBACKS TRACE_DIR\n", argv[0]);
        return 2;
    }
    wanted = atol(argv[1]);
    int p[2];
    if (wanted <= 0 || pipe(p) != 0 || write(p[1], "x", 1) != 1) return 2;
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argv[2];
    struct event_base *base = event_base_new();
    if (!base || d9_event_instrument(base, "counted") != 0 || d9_start(&cfg) != 0) return 1;
    ready = event_new(base, p[0], EV_READ | EV_PERSIST, d9e_counted_callback, &calls);
    if (!ready || event_add(ready, NULL) != 0) return 1;
    event_base_dispatch(base);
    d9_stop();
    printf("callbacks %ld\n%s\n", calls, d9_run_dir());
    event_free(ready);
    event_base_free(base);
    return calls == wanted ? 0 : 1;
}
