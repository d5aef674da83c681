/* What the libuv adapter adds per callback: HANDLES idle handles run ITERATIONS loop turns
 * (one callback each per turn); the time per callback (fastest of RUNS) is compared between a
 * build without dial9 (d9_uv_callback_cost) and one linked with -ldial9-uv
 * (d9_uv_callback_cost_adapted), whose loop is instrumented and which measures with the
 * recorder stopped, then recording (runs of a hundredth of the turns, flushed in between, so that
 * the buffer never overflows: this measures recording, not dropping).
 *
 *   d9_uv_callback_cost [iterations]                 -> "plain: X ns/callback"
 *   d9_uv_callback_cost_adapted [iterations] [dir]   -> "off: X ns/callback", "on: ..."
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <uv.h>

#ifdef WITH_DIAL9
#include "dial9/uv.h"
#endif

#define HANDLES 64
#define RUNS 15

static uv_idle_t idles[HANDLES];
static long remaining;
static long calls;

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
static double measure(uv_loop_t *loop, long iterations, void (*between)(void)) {
    double per[RUNS];
    for (int r = 0; r < RUNS; r++) {
        for (int i = 0; i < HANDLES; i++) uv_idle_start(&idles[i], on_idle);
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

int main(int argc, char **argv) {
    long iterations = argc > 1 ? atol(argv[1]) : 20000;
    uv_loop_t loop;
    uv_loop_init(&loop);
    for (int i = 0; i < HANDLES; i++) uv_idle_init(&loop, &idles[i]);
#ifndef WITH_DIAL9
    printf("plain: %.1f ns/callback\n", measure(&loop, iterations, NULL));
    printf("plain (short runs): %.1f ns/callback\n", measure(&loop, iterations / 100, NULL));
#else
    d9_uv_instrument(&loop, "bench");
    printf("off: %.1f ns/callback (recorder not started)\n", measure(&loop, iterations, NULL));
    printf("off (short runs): %.1f ns/callback\n", measure(&loop, iterations / 100, NULL));
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argc > 2 ? argv[2] : "/tmp/d9-uv-cost";
    /* the loop thread got its buffer (default size) when it first ran: runs stay short */
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_start: %s\n", d9_last_error());
        return 1;
    }
    double on = measure(&loop, iterations / 100, d9_flush);
    d9_stats st;
    d9_stop();
    d9_get_stats(&st);
    printf("on: %.1f ns/callback (events recorded %llu, dropped %llu)\n", on,
           (unsigned long long)st.events_recorded, (unsigned long long)st.events_dropped);
#endif
    for (int i = 0; i < HANDLES; i++) uv_close((uv_handle_t *)&idles[i], NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return 0;
}
