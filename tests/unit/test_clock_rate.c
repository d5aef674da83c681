/* d9_clock_ticks_per_ns: the tick rate measured from the clock's selection at the start, which
 * the task dumps use to turn their mean gap into ticks. It must agree with the rate over a
 * long span (within a margin no load reaches: a bracketed anchor is off by its bracket, under
 * 1 µs, over a span of at least 100 µs), and be exactly 1 when ticks are ns. How long it waits
 * is printed, not checked (a preemption between the selection and the call shortens it). */
#include <time.h>

#include "check.h"
#include "core/clock.h"

static double long_rate(void) {
    d9_anchor a = d9_clock_anchor_now();
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    d9_anchor b = d9_clock_anchor_now();
    return (double)(b.ticks - a.ticks) / (double)(b.mono_ns - a.mono_ns);
}

int main(void) {
    CHECK(d9_clock_select(D9_CLOCK_MONOTONIC) == D9_CLOCK_MONOTONIC);
    CHECK(d9_clock_ticks_per_ns(100 * 1000) == 1.0);

    /* The TSC, forced (rdtsc works on every x86-64, trusted or not): a rate in ticks per ns. */
    CHECK(d9_clock_select(D9_CLOCK_TSC) == D9_CLOCK_TSC);
    uint64_t t0 = d9_mono_ns();
    double quick = d9_clock_ticks_per_ns(100 * 1000);
    uint64_t waited = d9_mono_ns() - t0;
    double reference = long_rate();
    printf("ticks per ns: %.6f from the selection (waited %.1f us), %.6f over 20 ms\n", quick,
           (double)waited / 1000.0, reference);
    CHECK(reference > 0.01);
    CHECK(quick > reference * 0.95 && quick < reference * 1.05);

    /* Time already spent since the selection counts towards the span. */
    CHECK(d9_clock_select(D9_CLOCK_TSC) == D9_CLOCK_TSC);
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double later = d9_clock_ticks_per_ns(100 * 1000);
    CHECK(later > reference * 0.95 && later < reference * 1.05);
    return d9t_summary("clock_rate");
}
