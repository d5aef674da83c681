/* src/common/round.h: d9_round_u64 rounds as llround does (halves away from zero) over the
 * range its callers give it, [0, 2^64): the halves, the doubles next to them (0.5 - 2^-54 is
 * where `(uint64_t)(x + 0.5)` goes wrong), integers past 2^53, and a sweep of random values. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "test_rng.h"

#include "common/round.h"

static uint64_t reference(double x) { return (uint64_t)llround(x); }

static void test_edges(void) {
    CHECK_EQ_U64(d9_round_u64(0.0), 0);
    CHECK_EQ_U64(d9_round_u64(0.5), 1);
    CHECK_EQ_U64(d9_round_u64(nextafter(0.5, 0)), 0);
    CHECK_EQ_U64(d9_round_u64(1.5), 2);
    CHECK_EQ_U64(d9_round_u64(2.5), 3);
    CHECK_EQ_U64(d9_round_u64(2.4999999), 2);
    CHECK_EQ_U64(d9_round_u64(1e-300), 0);
    CHECK_EQ_U64(d9_round_u64(4503599627370495.5), 4503599627370496ull); /* 2^52 - 0.5 */
    CHECK_EQ_U64(d9_round_u64(9007199254740993.0), 9007199254740992ull); /* 2^53 + 1: not a double */
    CHECK_EQ_U64(d9_round_u64(1e18), 1000000000000000000ull);            /* cmd_check's largest */
    CHECK_EQ_U64(d9_round_u64(18446744073709549568.0), 18446744073709549568ull); /* the last below 2^64 */
    for (double x = 0; x < 4; x += 0.5) {
        double around[3] = {nextafter(x, 0), x, nextafter(x, 8)};
        for (int i = 0; i < 3; i++) CHECK_EQ_U64(d9_round_u64(around[i]), reference(around[i]));
    }
}

/* random doubles in [0, 2^62] (llround's long long holds them), spread over every exponent */
static void test_sweep(void) {
    d9t_rng rng = {D9T_RNG_SEED};
    uint64_t bad = 0;
    for (int i = 0; i < 1000000; i++) {
        uint64_t s = d9t_rng_next(&rng);
        double x = ldexp((double)(s >> 11) / 9007199254740992.0, (int)(s % 63));
        if (d9_round_u64(x) != reference(x) && bad++ < 5) fprintf(stderr, "%.17g: %" PRIu64 " vs %" PRIu64 "\n", x,
                                                                   d9_round_u64(x), reference(x));
    }
    CHECK_EQ_U64(bad, 0);
}

int main(void) {
    test_edges();
    test_sweep();
    return d9t_summary("test_common_round");
}
