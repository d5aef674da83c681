/* The upload circuit breaker on a fake clock (no sleeps): short backoffs while closed, open
 * after the threshold of consecutive failures, a cool-down that doubles with each failed probe
 * (jittered into its upper half, capped), one probe when half-open, closed again on success. */
#include "check.h"
#include "sinks/circuit_breaker.h"

#define S 1000000000ull

/* A breaker whose wait is within [lo, hi] ns from `now`. */
static bool waits_within(d9_breaker *b, uint64_t now, uint64_t lo, uint64_t hi) {
    uint64_t w = d9_breaker_wait_ns(b, now);
    if (w < lo || w > hi) fprintf(stderr, "wait %llu not in [%llu, %llu]\n", (unsigned long long)w,
                                  (unsigned long long)lo, (unsigned long long)hi);
    return w >= lo && w <= hi;
}

static void closed_backoff_then_open(uint64_t seed) {
    d9_breaker b;
    d9_breaker_init(&b, seed);
    uint64_t now = 1000 * S;
    CHECK_EQ_U64(d9_breaker_wait_ns(&b, now), 0); /* closed, no failure: go */
    /* failures 1..4: backoff 0.5, 1, 2, 4 s, each a wait in its upper half */
    uint64_t base = S / 2;
    for (unsigned k = 1; k < D9_BREAKER_THRESHOLD; k++) {
        CHECK(!d9_breaker_failure(&b, now));
        CHECK(b.state == D9_BREAKER_CLOSED);
        CHECK(waits_within(&b, now, base / 2, base));
        uint64_t w = d9_breaker_wait_ns(&b, now);
        CHECK(d9_breaker_wait_ns(&b, now + w - 1) == 1); /* not a moment early */
        now += w;
        CHECK_EQ_U64(d9_breaker_wait_ns(&b, now), 0);
        base *= 2;
    }
    /* the threshold-th consecutive failure opens it for the first cool-down */
    CHECK(d9_breaker_failure(&b, now));
    CHECK(b.state == D9_BREAKER_OPEN);
    CHECK_EQ_U64(b.opened, 1);
    CHECK(waits_within(&b, now, D9_BREAKER_COOLDOWN_FIRST_NS / 2, D9_BREAKER_COOLDOWN_FIRST_NS));
    /* nothing goes during the cool-down, however often asked */
    uint64_t w = d9_breaker_wait_ns(&b, now);
    for (int i = 0; i < 10; i++) CHECK(d9_breaker_wait_ns(&b, now + w / 2) > 0);
    CHECK(b.state == D9_BREAKER_OPEN);
    /* then half-open: one probe; it fails: open again, twice as long each time, capped */
    uint64_t cool = D9_BREAKER_COOLDOWN_FIRST_NS;
    for (int probe = 0; probe < 8; probe++) {
        now += d9_breaker_wait_ns(&b, now);
        CHECK_EQ_U64(d9_breaker_wait_ns(&b, now), 0);
        CHECK(b.state == D9_BREAKER_HALF_OPEN);
        CHECK(d9_breaker_failure(&b, now));
        CHECK(b.state == D9_BREAKER_OPEN);
        cool = cool * 2 > D9_BREAKER_COOLDOWN_MAX_NS ? D9_BREAKER_COOLDOWN_MAX_NS : cool * 2;
        CHECK(waits_within(&b, now, cool / 2, cool));
    }
    CHECK_EQ_U64(cool, D9_BREAKER_COOLDOWN_MAX_NS); /* reached the cap */
    CHECK_EQ_U64(b.opened, 9);
    /* a successful probe closes it: the next failure backs off briefly again */
    now += d9_breaker_wait_ns(&b, now);
    CHECK_EQ_U64(d9_breaker_wait_ns(&b, now), 0);
    d9_breaker_success(&b);
    CHECK(b.state == D9_BREAKER_CLOSED);
    CHECK_EQ_U64(b.failures, 0);
    CHECK_EQ_U64(d9_breaker_wait_ns(&b, now), 0);
    CHECK(!d9_breaker_failure(&b, now));
    CHECK(waits_within(&b, now, S / 4, S / 2));
}

/* A success between failures resets the count: only consecutive failures open it. */
static void success_resets_count(void) {
    d9_breaker b;
    d9_breaker_init(&b, 7);
    uint64_t now = 0;
    for (int round = 0; round < 5; round++) {
        for (unsigned k = 1; k < D9_BREAKER_THRESHOLD; k++) {
            CHECK(!d9_breaker_failure(&b, now));
            now += d9_breaker_wait_ns(&b, now);
        }
        d9_breaker_success(&b);
    }
    CHECK(b.state == D9_BREAKER_CLOSED);
    CHECK_EQ_U64(b.opened, 0);
}

/* The jitter spreads the waits (two seeds, or one seed over time, do not give one value). */
static void jitter_varies(void) {
    uint64_t seen[32];
    size_t distinct = 0;
    for (uint64_t seed = 1; seed <= 32; seed++) {
        d9_breaker b;
        d9_breaker_init(&b, seed * 0x9E3779B97F4A7C15ull);
        b.threshold = 1;
        CHECK(d9_breaker_failure(&b, 0));
        uint64_t w = d9_breaker_wait_ns(&b, 0);
        CHECK(w >= D9_BREAKER_COOLDOWN_FIRST_NS / 2 && w <= D9_BREAKER_COOLDOWN_FIRST_NS);
        bool dup = false;
        for (size_t i = 0; i < distinct; i++) dup |= seen[i] == w;
        if (!dup) seen[distinct++] = w;
    }
    CHECK(distinct > 16);
}

/* Settings the caller changes (a short cool-down for tests, DIAL9_S3_BREAKER_SECS). */
static void custom_settings(void) {
    d9_breaker b;
    d9_breaker_init(&b, 3);
    b.threshold = 2;
    b.cooldown_first_ns = 2 * S;
    b.cooldown_max_ns = 5 * S;
    CHECK(!d9_breaker_failure(&b, 0));
    CHECK(waits_within(&b, 0, S / 4, S / 2));
    CHECK(d9_breaker_failure(&b, S));
    CHECK(waits_within(&b, S, 1 * S, 2 * S));
    uint64_t now = S + d9_breaker_wait_ns(&b, S);
    CHECK_EQ_U64(d9_breaker_wait_ns(&b, now), 0);
    CHECK(d9_breaker_failure(&b, now)); /* probe failed: 4 s */
    CHECK(waits_within(&b, now, 2 * S, 4 * S));
    now += d9_breaker_wait_ns(&b, now);
    CHECK_EQ_U64(d9_breaker_wait_ns(&b, now), 0);
    CHECK(d9_breaker_failure(&b, now)); /* 8 s, capped at 5 */
    CHECK(waits_within(&b, now, 5 * S / 2, 5 * S));
}

int main(void) {
    for (uint64_t seed = 1; seed < 50; seed++) closed_backoff_then_open(seed * 2654435761u);
    success_resets_count();
    jitter_varies();
    custom_settings();
    return d9t_summary("test_sink_circuit_breaker");
}
