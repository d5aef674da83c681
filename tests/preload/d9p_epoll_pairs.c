/* A libevent loop (shared, as daemons have it) that runs N iterations of one epoll_wait and
 * one read, for test_preload_shim_instructions.sh: a persistent read event on a socket pair's
 * end, whose callback reads the byte that made it ready and writes the next one from the
 * other end, so every epoll_wait returns one ready event at once and never sleeps. The
 * recorder is waited for first, so that every iteration is recorded (parked, woken). */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wait_for_recorder.h"

static int pair[2];
static long left;
static struct event *readable;

static void on_readable(evutil_socket_t fd, short what, void *arg) {
    (void)what;
    (void)arg;
    char byte;
    if (read(fd, &byte, 1) != 1) exit(2);
    if (--left == 0) {
        event_del(readable);
        return;
    }
    if (write(pair[1], "x", 1) != 1) exit(2);
}

int main(int argc, char **argv) {
    left = argc > 1 ? atol(argv[1]) : 1000;
    if (left <= 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
    d9p_wait_for_recorder();
    struct event_base *base = event_base_new();
    if (!base) return 1;
    readable = event_new(base, pair[0], EV_READ | EV_PERSIST, on_readable, NULL);
    if (!readable || event_add(readable, NULL) != 0) return 1;
    long iterations = left;
    if (write(pair[1], "x", 1) != 1) return 1;
    event_base_dispatch(base);
    printf("iterations %ld\n", iterations);
    event_free(readable);
    event_base_free(base);
    return 0;
}
