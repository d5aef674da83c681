/* The tests' one random generator: xorshift64 (Marsaglia's 13/7/17 triple), seeded, so a test
 * draws the same inputs on every run and machine and a failure replays. Not for anything a
 * test measures the randomness of: it is there to spread inputs. Header-only. */
#ifndef D9_TESTS_TEST_RNG_H
#define D9_TESTS_TEST_RNG_H

#include <stdint.h>

typedef struct d9t_rng {
    uint64_t state; /* never 0 (xorshift stays at 0): d9t_rng_seeded makes sure */
} d9t_rng;

/* the seed most tests take (2^64 / golden ratio) */
#define D9T_RNG_SEED 0x9e3779b97f4a7c15ull

/* A generator from seed (0 takes D9T_RNG_SEED); also usable as a static initialiser's value
 * when the seed is a nonzero constant: static d9t_rng rng = {SEED}; */
static inline d9t_rng d9t_rng_seeded(uint64_t seed) {
    d9t_rng r = {seed ? seed : D9T_RNG_SEED};
    return r;
}

/* The next value, never 0. */
static inline uint64_t d9t_rng_next(d9t_rng *r) {
    uint64_t x = r->state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->state = x;
    return x;
}

/* A value in [0, n) (n > 0; modulo: the slight bias toward small values does not matter here). */
static inline uint64_t d9t_rng_below(d9t_rng *r, uint64_t n) { return d9t_rng_next(r) % n; }

#endif
