/* The libev adapter's per-callback cost, for callgrind (test_ev_adapter_instructions.sh): one
 * io watcher on a pipe that stays readable, so every loop turn libev feeds it (ev_feed_event,
 * the readiness wake) and calls it once through the adapter's trampoline, N times while
 * recording, then the loop ends. Prints "callbacks N" and the trace's run directory. */
#include <unistd.h>

#include "counted_program.h"
#include "dial9/ev.h"

static long calls, wanted;

void d9v_counted_callback(struct ev_loop *loop, ev_io *w, int revents);

/* noinline and named: the test leaves the application's own instructions out by this name */
__attribute__((noinline)) void d9v_counted_callback(struct ev_loop *loop, ev_io *w, int revents) {
    (void)revents;
    if (++calls == wanted) ev_io_stop(loop, w);
    __asm__ volatile("" ::"r"(w->data) : "memory");
}

int main(int argc, char **argv) {
    wanted = d9t_counted_n(argc, argv, "CALLBACKS", NULL, NULL);
    int p[2];
    if (wanted <= 0 || pipe(p) != 0 || write(p[1], "x", 1) != 1) return 2;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    if (!loop || d9_ev_instrument(loop, "counted") != 0 || d9t_counted_start(argv[2]) != 0)
        return 1;
    ev_io ready;
    ev_io_init(&ready, d9v_counted_callback, p[0], EV_READ);
    ready.data = &calls;
    ev_io_start(loop, &ready);
    ev_run(loop, 0);
    d9t_counted_report("callbacks", calls);
    ev_loop_destroy(loop);
    return calls == wanted ? 0 : 1;
}
