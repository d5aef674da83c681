/* A libev program as short as a first try, for test_preload_every_callback.sh: one repeating
 * 1 ms ev_timer and nothing else, 300 callbacks, then the loop ends. It prints how many times
 * the callback ran; the trace must hold exactly that many polls of it. */
#include <ev.h>
#include <stdio.h>

#define CALLS 300

static int calls;

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    if (++calls == CALLS) ev_timer_stop(loop, w);
}

int main(void) {
    struct ev_loop *loop = ev_default_loop(0);
    if (!loop) return 1;
    ev_timer timer;
    ev_timer_init(&timer, on_timer, 0.001, 0.001);
    ev_timer_start(loop, &timer);
    ev_run(loop, 0);
    printf("on_timer %d\n", calls);
    return 0;
}
