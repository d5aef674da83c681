/* A libevent program linked with libevent_core.a: its loop cannot be interposed, so the shim
 * must fall back to parks from epoll_wait and say so in the metadata (source.libevent). */
#include <event2/event.h>
#include <stdio.h>

#include "wait_for_recorder.h"

static int g_fired;

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    struct event *ev = arg;
    if (++g_fired == 20) return;
    struct timeval tv = {0, 2000};
    event_add(ev, &tv);
}

int main(void) {
    d9p_wait_for_recorder(); /* the test counts the parks */
    struct event_base *base = event_base_new();
    struct event *ev = event_new(base, -1, 0, on_timer, event_self_cbarg());
    struct timeval tv = {0, 2000};
    event_add(ev, &tv);
    event_base_dispatch(base);
    event_free(ev);
    event_base_free(base);
    printf("timer fired %d times\n", g_fired);
    return 0;
}
