/* Rounding to the nearest integer without libm: the `dial9` command links libc only, because
 * every library it loads is added to the start of each program `dial9 run` records. */
#ifndef D9_COMMON_ROUND_H
#define D9_COMMON_ROUND_H

#include <stdint.h>

/* x rounded, halves away from zero (llround's rule). x must be in [0, 2^64): the callers
 * check the range first, the conversion is undefined outside it (NaN included). */
static inline uint64_t d9_round_u64(double x) {
    uint64_t i = (uint64_t)x; /* the integer part */
    return x - (double)i >= 0.5 ? i + 1 : i; /* exact: i <= x < i + 1, or x is an integer */
}

#endif
