/* What the libuv adapter adds per callback: HANDLES idle handles run ITERATIONS loop turns
 * (one callback each per turn); the time per callback (fastest of RUNS) is compared between a
 * build without dial9 (d9_uv_callback_cost) and one linked with -ldial9-uv
 * (d9_uv_callback_cost_adapted), whose loop is instrumented and which measures with the
 * recorder stopped, then recording (runs of a hundredth of the turns, flushed in between, so that
 * the buffer never overflows: this measures recording, not dropping).
 *
 * The same for I/O callbacks ("io"): HANDLES uv_poll handles on eventfds that stay readable,
 * so each loop turn's epoll_wait returns all of them and each callback follows a readiness
 * wake (recorded by the adapter at the poller's return, on top of the poll itself).
 * "ready wake" times the hook alone (d9_wake_ready) while recording.
 *
 *   d9_uv_callback_cost [iterations]                 -> "plain: X ns/callback"
 *   d9_uv_callback_cost_adapted [iterations] [dir]   -> "off: X ns/callback", "on: ..."
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#ifdef WITH_DIAL9
#include "dial9/uv.h"
#endif

#define HANDLES 64
#define RUNS 15

static uv_idle_t idles[HANDLES];
static uv_poll_t polls[HANDLES];
static int fds[HANDLES];
static long remaining;
static long calls;

static void on_poll(uv_poll_t *h, int status, int events) {
    (void)status;
    (void)events;
    calls++;
    if (h == &polls[0] && --remaining == 0)
        for (int i = 0; i < HANDLES; i++) uv_poll_stop(&polls[i]);
}

static void on_idle(uv_idle_t *h) {
    calls++;
    if (h == &idles[0] && --remaining == 0)
        for (int i = 0; i < HANDLES; i++) uv_idle_stop(&idles[i]);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Fastest of RUNS, ns per callback (other load on the machine only adds time). `between`
 * runs between the timed runs (may be NULL). */
static double measure_with(uv_loop_t *loop, long iterations, void (*between)(void), bool io) {
    double per[RUNS];
    for (int r = 0; r < RUNS; r++) {
        for (int i = 0; i < HANDLES; i++) {
            if (io) uv_poll_start(&polls[i], UV_READABLE, on_poll);
            else uv_idle_start(&idles[i], on_idle);
        }
        remaining = iterations;
        calls = 0;
        double t0 = now_ns();
        uv_run(loop, UV_RUN_DEFAULT);
        per[r] = (now_ns() - t0) / (double)calls;
        if (between) between();
    }
    qsort(per, RUNS, sizeof per[0], by_value);
    return per[0];
}

static double measure(uv_loop_t *loop, long iterations, void (*between)(void)) {
    return measure_with(loop, iterations, between, false);
}

static double measure_io(uv_loop_t *loop, long iterations, void (*between)(void)) {
    return measure_with(loop, iterations, between, true);
}

int main(int argc, char **argv) {
    long iterations = argc > 1 ? atol(argv[1]) : 20000;
    uv_loop_t loop;
    uv_loop_init(&loop);
    for (int i = 0; i < HANDLES; i++) uv_idle_init(&loop, &idles[i]);
    for (int i = 0; i < HANDLES; i++) {
        fds[i] = eventfd(1, EFD_NONBLOCK); /* never read: readable on every turn */
        if (fds[i] < 0 || uv_poll_init(&loop, &polls[i], fds[i]) != 0) {
            perror("eventfd");
            return 1;
        }
    }
#ifndef WITH_DIAL9
    printf("plain: %.1f ns/callback\n", measure(&loop, iterations, NULL));
    printf("plain (short runs): %.1f ns/callback\n", measure(&loop, iterations / 100, NULL));
    printf("io plain (short runs): %.1f ns/callback\n", measure_io(&loop, iterations / 100, NULL));
#else
    d9_uv_instrument(&loop, "bench");
    printf("off: %.1f ns/callback (recorder not started)\n", measure(&loop, iterations, NULL));
    printf("off (short runs): %.1f ns/callback\n", measure(&loop, iterations / 100, NULL));
    double off_io = measure_io(&loop, iterations / 100, NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argc > 2 ? argv[2] : "/tmp/d9-uv-cost";
    /* the loop thread got its buffer (default size) when it first ran: runs stay short */
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_start: %s\n", d9_last_error());
        return 1;
    }
    double on = measure(&loop, iterations / 100, d9_flush);
    double on_io = measure_io(&loop, iterations / 100, d9_flush);
    /* the readiness wake alone: the hook the adapter calls per ready fd */
    double wake[RUNS];
    for (int r = 0; r < RUNS; r++) {
        long n = HANDLES * (iterations / 100);
        double t0 = now_ns();
        for (long i = 0; i < n; i++) d9_wake_ready((uint64_t)i + 1);
        wake[r] = (now_ns() - t0) / (double)n;
        d9_flush();
    }
    qsort(wake, RUNS, sizeof wake[0], by_value);
    d9_stats st;
    d9_stop();
    d9_get_stats(&st);
    printf("on: %.1f ns/callback (events recorded %llu, dropped %llu)\n", on,
           (unsigned long long)st.events_recorded, (unsigned long long)st.events_dropped);
    printf("io off (short runs): %.1f ns/callback\n", off_io);
    printf("io on: %.1f ns/callback (poll + readiness wake)\n", on_io);
    printf("ready wake: %.1f ns/wake (d9_wake_ready alone)\n", wake[0]);
#endif
    for (int i = 0; i < HANDLES; i++) uv_close((uv_handle_t *)&polls[i], NULL);
    for (int i = 0; i < HANDLES; i++) uv_close((uv_handle_t *)&idles[i], NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    for (int i = 0; i < HANDLES; i++) close(fds[i]);
    return 0;
}
