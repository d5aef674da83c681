/* e^-x and -ln(u) without libm (the `dial9` command and the shim link libc only, see round.h):
 * the exponential draws of the samplers and the heap samples' weights. */
#ifndef D9_COMMON_EXP_LOG_H
#define D9_COMMON_EXP_LOG_H

#include <stdint.h>

/* -ln(u) for u in (0, 1]: u = m * 2^e with m in [1, 2), and ln(m) = 2 atanh((m - 1) / (m + 1))
 * by its series (|z| <= 1/3: relative error < 2e-6). */
static inline double d9_neg_log(double u) {
    union {
        double d;
        uint64_t b;
    } x = {u};
    int e = (int)((x.b >> 52) & 0x7ff) - 1023;
    x.b = (x.b & ((1ull << 52) - 1)) | (1023ull << 52);
    double z = (x.d - 1) / (x.d + 1), z2 = z * z;
    double ln_m = 2 * z * (1 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 / 9))));
    return -((double)e * 0.6931471805599453 + ln_m);
}

/* 1 - e^-x for x >= 0, accurate for small x too (the weight of a block much smaller than the
 * sampling interval is 1 / (1 - e^-x) with x tiny): x = k ln 2 + r with |r| <= ln 2 / 2, and
 * e^-r by its Taylor series (relative error < 1e-12). */
static inline double d9_one_minus_exp_neg(double x) {
    if (!(x > 0)) return 0;
    if (x < 0.5) { /* x - x^2/2 + x^3/6 - ...: no cancellation */
        double term = x, sum = x;
        for (int n = 2; n < 20; n++) {
            term *= -x / n;
            sum += term;
        }
        return sum;
    }
    if (x > 700) return 1;
    int k = (int)(x / 0.6931471805599453 + 0.5);
    double r = x - k * 0.6931471805599453, term = 1, e = 1;
    for (int n = 1; n < 20; n++) {
        term *= -r / n;
        e += term;
    }
    union {
        double d;
        uint64_t b;
    } scale = {.b = (uint64_t)(1023 - k) << 52}; /* 2^-k, k <= 1010 */
    return 1 - e * scale.d;
}

#endif
