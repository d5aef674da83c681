/* INT64 values copied with their min and max (copy_minmax.h). The AVX2 loop is picked once,
 * by the CPU's features: a build for any x86-64 keeps its scalar loop for the others. */
#include "parquet/copy_minmax.h"

#include <stdatomic.h>
#include <stdbool.h>

static void copy_minmax_scalar(int64_t *dst, const int64_t *src, size_t n, int64_t *lo, int64_t *hi) {
    int64_t l = *lo, h = *hi;
    for (size_t i = 0; i < n; i++) {
        int64_t x = src[i];
        dst[i] = x;
        l = x < l ? x : l;
        h = x > h ? x : h;
    }
    *lo = l;
    *hi = h;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx2"))) static void copy_minmax_avx2(int64_t *dst, const int64_t *src, size_t n, int64_t *lo,
                                                             int64_t *hi) {
    __m256i l = _mm256_set1_epi64x(*lo), h = _mm256_set1_epi64x(*hi);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), x);
        l = _mm256_blendv_epi8(l, x, _mm256_cmpgt_epi64(l, x));
        h = _mm256_blendv_epi8(h, x, _mm256_cmpgt_epi64(x, h));
    }
    int64_t ls[4], hs[4];
    _mm256_storeu_si256((__m256i *)(void *)ls, l);
    _mm256_storeu_si256((__m256i *)(void *)hs, h);
    for (int k = 0; k < 4; k++) {
        *lo = ls[k] < *lo ? ls[k] : *lo;
        *hi = hs[k] > *hi ? hs[k] : *hi;
    }
    copy_minmax_scalar(dst + i, src + i, n - i, lo, hi);
}

static bool have_avx2(void) {
    static _Atomic int known; /* 0 not asked yet, 1 no, 2 yes: the same answer from any thread */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        k = __builtin_cpu_supports("avx2") ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}
#endif

void pq_copy_minmax_i64(int64_t *dst, const int64_t *src, size_t n, int64_t *lo, int64_t *hi) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (n >= 8 && have_avx2()) {
        copy_minmax_avx2(dst, src, n, lo, hi);
        return;
    }
#endif
    copy_minmax_scalar(dst, src, n, lo, hi);
}
