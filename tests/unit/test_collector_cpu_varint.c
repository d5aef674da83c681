/* The collector's CPU-time varint (core/collector_cpu_varint.h), written from the thread's
 * previous one, is byte for byte d9_raw_varint's: along random walks of a thread's CPU time
 * (steps of nanoseconds to seconds, so that the high bytes are kept, or change, or the length
 * grows), at every length from the varint of 0 to ten bytes and back, and for values that share
 * their high bits with the previous one across each byte's boundary. */
#include "check.h"
#include "test_rng.h"
#include "core/collector_cpu_varint.h"

static int bad, checked;

static void compare(d9_cpu_varint_memo *m, uint64_t v) {
    uint8_t want[32], got[32];
    memset(want, 0xee, sizeof want);
    memset(got, 0xee, sizeof got);
    size_t wn = (size_t)(d9_raw_varint(want, v) - want);
    size_t gn = (size_t)(d9_cpu_varint(m, got, v) - got);
    checked++;
    if (wn != gn || memcmp(want, got, wn) != 0) {
        if (bad++ < 10)
            fprintf(stderr, "value %llu (after %llu): %zu bytes by the loop, %zu by the memo\n",
                    (unsigned long long)v, (unsigned long long)m->value, wn, gn);
    }
}

int main(void) {
    d9t_rng rng = {D9T_RNG_SEED};
    /* random walks: each step up to 2^k ns, k from 0 (1 ns) to 40 (~18 min) */
    for (unsigned k = 0; k <= 40; k += 4) {
        d9_cpu_varint_memo m = {0};
        uint64_t v = d9t_rng_next(&rng) >> (64 - 34); /* up to ~17 s of CPU to start */
        for (int i = 0; i < 20000; i++) {
            compare(&m, v);
            v += d9t_rng_next(&rng) & ((2ull << k) - 1);
        }
    }
    /* each length and back, from one memo: every bit count up, then down */
    d9_cpu_varint_memo m = {0};
    for (int b = 0; b <= 64; b++) compare(&m, b ? (d9t_rng_next(&rng) >> (64 - b)) | 1ull << (b - 1) : 0);
    for (int b = 64; b >= 0; b--) compare(&m, b ? (d9t_rng_next(&rng) >> (64 - b)) | 1ull << (b - 1) : 0);
    /* around each 7-bit boundary: a value and its neighbours, twice (the second time from a memo
     * holding the same value) */
    for (int b = 1; b < 64; b++) {
        uint64_t p = 1ull << b;
        uint64_t around[] = {p - 1, p, p + 1, p - 1, p | (p - 1), p, 0x1fffff, 0x200000, p - 1};
        for (size_t i = 0; i < sizeof around / sizeof around[0]; i++) compare(&m, around[i]);
    }
    /* the same value again and again (an unpark that carries its park's value) */
    for (int i = 0; i < 100; i++) compare(&m, 123456789012ull);
    CHECK(checked > 200000);
    CHECK_EQ_U64((uint64_t)bad, 0);
    return d9t_summary("collector_cpu_varint");
}
