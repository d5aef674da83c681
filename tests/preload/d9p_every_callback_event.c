/* A libevent program as short as a first try, for test_preload_every_callback.sh: one
 * persistent 1 ms timer event and nothing else, 300 callbacks, then the loop ends. It prints
 * how many times the callback ran; the trace must hold exactly that many polls of it. */
#include <event2/event.h>
#include <stdio.h>

#define CALLS 300

static int calls;
static struct event *timer;

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
    if (++calls == CALLS) event_del(timer);
}

int main(void) {
    struct event_base *base = event_base_new();
    if (!base) return 1;
    timer = event_new(base, -1, EV_PERSIST, on_timer, NULL);
    struct timeval every = {0, 1000};
    if (!timer || event_add(timer, &every) != 0) return 1;
    event_base_dispatch(base);
    printf("on_timer %d\n", calls);
    event_free(timer);
    event_base_free(base);
    return 0;
}
