/* A daemon that drops privileges after starting its threads, as memcached -u does: two
 * libevent worker threads (one event base each, reading a pipe), then main calls setgid and
 * setuid(65534) and feeds the pipes for a while, then stops the workers and exits. Run as
 * root under `dial9 run` (test_preload_privdrop.sh): the recording must go on as uid 65534.
 * Never links dial9: the shim is what is under test.
 *
 *   d9p_privdrop MS     feed the workers for MS milliseconds after the drop */
#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct worker {
    struct event_base *base;
    int pipe[2];
    pthread_t th;
} worker;

static void on_readable(evutil_socket_t fd, short what, void *arg) {
    (void)what;
    worker *w = arg;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 'q') event_base_loopbreak(w->base);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    event_base_dispatch(w->base);
    return NULL;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 2000;
    worker ws[2];
    for (int i = 0; i < 2; i++) {
        worker *w = &ws[i];
        if (pipe(w->pipe) != 0 || !(w->base = event_base_new())) return 2;
        struct event *ev = event_new(w->base, w->pipe[0], EV_READ | EV_PERSIST, on_readable, w);
        if (!ev || event_add(ev, NULL) != 0) return 2;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) return 2;
    }
    /* the threads run: now the daemon takes its unprivileged identity */
    if (setgid(65534) != 0 || setuid(65534) != 0) {
        perror("d9p_privdrop: setgid/setuid");
        return 3;
    }
    if (getuid() != 65534 || geteuid() != 65534) return 3;
    struct timespec step = {0, 2 * 1000 * 1000};
    for (long t = 0; t < ms; t += 2) {
        for (int i = 0; i < 2; i++)
            if (write(ws[i].pipe[1], "x", 1) != 1) return 4;
        nanosleep(&step, NULL);
    }
    for (int i = 0; i < 2; i++) {
        if (write(ws[i].pipe[1], "q", 1) != 1) return 4;
        pthread_join(ws[i].th, NULL);
    }
    printf("d9p_privdrop: ran as uid %d\n", (int)geteuid());
    return 0;
}
