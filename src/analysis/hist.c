#include "analysis/hist.h"

#include <stdlib.h>
#include <string.h>

#define SUB_BITS 7
#define SUB (1u << SUB_BITS) /* buckets per power of two; also the exact range */

uint32_t d9a_hist_bucket(uint64_t v) {
    if (v < SUB) return (uint32_t)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS */
    uint32_t mant = (uint32_t)(v >> (e - SUB_BITS));  /* SUB .. 2*SUB-1 */
    return SUB + (e - SUB_BITS) * SUB + (mant - SUB);
}

uint64_t d9a_hist_bucket_low(uint32_t idx) {
    if (idx < SUB) return idx;
    unsigned e = (idx - SUB) / SUB + SUB_BITS;
    uint64_t mant = (idx - SUB) % SUB + SUB;
    return mant << (e - SUB_BITS);
}

uint64_t d9a_hist_bucket_width(uint32_t idx) {
    if (idx < SUB) return 1;
    unsigned e = (idx - SUB) / SUB + SUB_BITS;
    return 1ull << (e - SUB_BITS);
}

void d9a_hist_add(d9a_hist *h, uint64_t v) {
    uint32_t b = d9a_hist_bucket(v);
    if (b >= h->nbuckets) {
        /* grow to the next multiple of SUB past b: one power of two at a time */
        uint32_t n = (b / SUB + 1) * SUB;
        uint64_t *p = realloc(h->buckets, (size_t)n * sizeof *p);
        if (!p) {
            h->oom = true;
        } else {
            memset(p + h->nbuckets, 0, (size_t)(n - h->nbuckets) * sizeof *p);
            h->buckets = p;
            h->nbuckets = n;
        }
    }
    if (b < h->nbuckets) h->buckets[b]++;
    if (h->count == 0 || v < h->min) h->min = v;
    if (v > h->max) h->max = v;
    h->count++;
    h->sum = h->sum + v < h->sum ? UINT64_MAX : h->sum + v;
}

uint64_t d9a_hist_quantile(const d9a_hist *h, double q) {
    if (h->count == 0) return 0;
    if (q >= 1.0) return h->max;
    if (q <= 0.0) return h->min;
    double r = q * (double)h->count;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r) rank++; /* ceil */
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < h->nbuckets; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t mid = d9a_hist_bucket_low(i) + d9a_hist_bucket_width(i) / 2;
            if (mid < h->min) mid = h->min;
            if (mid > h->max) mid = h->max;
            return mid;
        }
    }
    return h->max;
}

uint64_t d9a_hist_count_above(const d9a_hist *h, uint64_t v) {
    if (h->count == 0 || v >= h->max) return 0;
    uint32_t b = d9a_hist_bucket(v);
    uint64_t n = 0;
    for (uint32_t i = b + 1; i < h->nbuckets; i++) n += h->buckets[i];
    return n;
}

void d9a_hist_free(d9a_hist *h) {
    free(h->buckets);
    memset(h, 0, sizeof *h);
}
