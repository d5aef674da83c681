/* Tick -> ns conversion (core/clock.h): the inline conversion between the two newest anchors
 * (the collector's, per event) agrees with the exact line through them to within 1 ns over the whole
 * span, for TSC rates from 0.5 to 5 GHz and spans from 1 ms to 100 s, and with the general
 * conversion (doubles) where both apply; ticks outside the span take the general path. Anchors
 * are given, not sampled: the results do not depend on this host's clock. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/clock.h"

/* floor(ns0 + (t - t0) * dns / dt), exactly (128-bit) */
static uint64_t exact(d9_anchor a, d9_anchor b, uint64_t t) {
    return a.mono_ns + (uint64_t)((unsigned __int128)(t - a.ticks) * (b.mono_ns - a.mono_ns) / (b.ticks - a.ticks));
}

static uint64_t diff(uint64_t x, uint64_t y) { return x > y ? x - y : y - x; }

int main(void) {
    d9_clock_use_tsc = true; /* the fast path is the TSC's */
    static const double ghz[] = {0.5, 1.0, 2.445, 3.0, 5.0};
    static const uint64_t span_ns[] = {1000000ull, 20000000ull, 1000000000ull, 100000000000ull};
    uint64_t worst_fast = 0, worst_general = 0, checked = 0;
    for (size_t g = 0; g < sizeof ghz / sizeof *ghz; g++) {
        for (size_t s = 0; s < sizeof span_ns / sizeof *span_ns; s++) {
            d9_clock_map m;
            memset(&m, 0, sizeof m);
            /* an uptime of days, ticks far from 0: what a real host has */
            d9_anchor a0 = {.ticks = 987654321012345ull, .mono_ns = 400000ull * 1000000000ull};
            d9_anchor a1 = {.ticks = a0.ticks + (uint64_t)(30e9 * ghz[g]), .mono_ns = a0.mono_ns + 30000000000ull};
            d9_anchor a2 = {.ticks = a1.ticks + (uint64_t)((double)span_ns[s] * ghz[g]) + 7,
                            .mono_ns = a1.mono_ns + span_ns[s]};
            m.first = a0;
            d9_clock_map_add(&m, a0);
            d9_clock_map_add(&m, a1);
            d9_clock_map_add(&m, a2);
            CHECK(m.fast_span == a2.ticks - a1.ticks);
            uint64_t span = a2.ticks - a1.ticks;
            for (uint64_t i = 0; i <= 1000; i++) {
                uint64_t t = a1.ticks + (uint64_t)((unsigned __int128)span * i / 1000);
                if (i == 1000) t = a2.ticks - 1;
                uint64_t fast = d9_clock_map_to_ns_fast(&m, t), general = d9_clock_map_to_ns(&m, t);
                uint64_t want = exact(a1, a2, t);
                if (diff(fast, want) > worst_fast) worst_fast = diff(fast, want);
                if (diff(fast, general) > worst_general) worst_general = diff(fast, general);
                checked++;
            }
            /* past the newest anchor: the general path, the same either way */
            uint64_t later = a2.ticks + 12345;
            CHECK_EQ_U64(d9_clock_map_to_ns_fast(&m, later), d9_clock_map_to_ns(&m, later));
            uint64_t earlier = a1.ticks - 1;
            CHECK_EQ_U64(d9_clock_map_to_ns_fast(&m, earlier), d9_clock_map_to_ns(&m, earlier));
        }
    }
    printf("clock_map: %llu ticks converted; worst vs the exact line %llu ns, vs the general path %llu ns\n",
           (unsigned long long)checked, (unsigned long long)worst_fast, (unsigned long long)worst_general);
    CHECK(worst_fast <= 1);
    CHECK(worst_general <= 1);

    /* ticks that are ns (no TSC): no fast span, the ticks themselves */
    d9_clock_use_tsc = false;
    d9_clock_map m;
    memset(&m, 0, sizeof m);
    d9_clock_map_add(&m, (d9_anchor){100, 100});
    d9_clock_map_add(&m, (d9_anchor){200, 200});
    CHECK_EQ_U64(m.fast_span, 0);
    CHECK_EQ_U64(d9_clock_map_to_ns_fast(&m, 150), 150);
    return d9t_summary("clock_map");
}
