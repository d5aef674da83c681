/* The libevent adapter's per-callback cost, for callgrind (test_event_adapter_instructions.sh):
 * one persistent read event on a pipe that stays readable, so every loop turn dispatches its
 * callback once through the adapter's trampoline, N times while recording, then the loop
 * ends. With "bufferevent", the read callback of a socket bufferevent instead, made readable
 * again by each callback. Prints "callbacks N" and the trace's run directory. */
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>

#include "counted_program.h"
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

static int peer; /* the other end of the bufferevent's socket */

void d9e_counted_read(struct bufferevent *bev, void *arg);

/* noinline and named, as above */
__attribute__((noinline)) void d9e_counted_read(struct bufferevent *bev, void *arg) {
    char buf[16];
    bufferevent_read(bev, buf, sizeof buf);
    if (++calls == wanted || write(peer, "x", 1) != 1) bufferevent_disable(bev, EV_READ);
    __asm__ volatile("" ::"r"(arg) : "memory");
}

int main(int argc, char **argv) {
    bool bufferevents;
    wanted = d9t_counted_n(argc, argv, "CALLBACKS", "bufferevent", &bufferevents);
    int p[2];
    if (wanted <= 0 || pipe(p) != 0 || write(p[1], "x", 1) != 1) return 2;
    struct event_base *base = event_base_new();
    if (!base || d9_event_instrument(base, "counted") != 0 || d9t_counted_start(argv[2]) != 0)
        return 1;
    struct bufferevent *bev = NULL;
    if (bufferevents) {
        int sv[2];
        if (evutil_socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || write(sv[1], "x", 1) != 1)
            return 1;
        peer = sv[1];
        bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
        if (!bev) return 1;
        bufferevent_setcb(bev, d9e_counted_read, NULL, NULL, &calls);
        if (bufferevent_enable(bev, EV_READ) != 0) return 1;
    } else {
        ready = event_new(base, p[0], EV_READ | EV_PERSIST, d9e_counted_callback, &calls);
        if (!ready || event_add(ready, NULL) != 0) return 1;
    }
    event_base_dispatch(base);
    d9t_counted_report("callbacks", calls);
    if (bev) bufferevent_free(bev);
    else event_free(ready);
    event_base_free(base);
    return calls == wanted ? 0 : 1;
}
