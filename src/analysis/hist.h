/* A log-bucket histogram of unsigned values (durations in ns), HDR-style: values below 128 are
 * counted exactly; above, each power of two is split into 128 buckets, so a quantile read
 * from it (the bucket's midpoint, clamped to the exact min and max) is within 0.4 % of the
 * true value. Buckets are allocated up to the largest value seen (at most 7 424 of them), so a
 * histogram of sub-millisecond polls costs a few KiB whatever the number of values. */
#ifndef D9_ANALYSIS_HIST_H
#define D9_ANALYSIS_HIST_H

#include <stdbool.h>
#include <stdint.h>

typedef struct d9a_hist {
    uint64_t *buckets;
    uint32_t nbuckets;
    bool oom;       /* a bucket could not be allocated: quantiles may be low */
    uint64_t count; /* exact */
    uint64_t sum;   /* exact (saturating) */
    uint64_t min;   /* exact; 0 when empty */
    uint64_t max;   /* exact */
} d9a_hist;

void d9a_hist_add(d9a_hist *h, uint64_t v);
/* The value at quantile q (0..1): the smallest recorded value v such that at least q*count
 * values are <= v, within 0.4 %. q >= 1 gives the exact max; 0 when empty. */
uint64_t d9a_hist_quantile(const d9a_hist *h, double q);
/* How many recorded values are > v (exact when v < 128, else by bucket: values in v's own
 * bucket count as not above). */
uint64_t d9a_hist_count_above(const d9a_hist *h, uint64_t v);
void d9a_hist_free(d9a_hist *h);

/* Bucket arithmetic, exposed for tests. */
uint32_t d9a_hist_bucket(uint64_t v);
uint64_t d9a_hist_bucket_low(uint32_t idx);
uint64_t d9a_hist_bucket_width(uint32_t idx);

#endif
