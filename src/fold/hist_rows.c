/* poll_hist's merged buckets (hist_rows.h). Analyze's buckets below 128 are single values and
 * above it 128 to a power of two, so eight consecutive ones never straddle a power of two:
 * a merged bucket is one contiguous range. */
#include "fold/hist_rows.h"

int d9f_hist_rows(const d9a_hist *h, int (*fn)(const d9f_hist_row *row, void *ctx), void *ctx) {
    uint32_t min_b = d9a_hist_bucket(h->min) / D9F_HIST_MERGE, max_b = d9a_hist_bucket(h->max) / D9F_HIST_MERGE;
    for (uint32_t b0 = 0; b0 < h->nbuckets; b0 += D9F_HIST_MERGE) {
        uint32_t b1 = b0 + D9F_HIST_MERGE; /* analyze's buckets [b0, b1) */
        uint64_t n = 0;
        for (uint32_t b = b0; b < b1 && b < h->nbuckets; b++) n += h->buckets[b];
        if (!n) continue;
        uint32_t m = b0 / D9F_HIST_MERGE;
        d9f_hist_row r = {.bucket = (int32_t)m, .count = n, .low = d9a_hist_bucket_low(b0),
                          .high = d9a_hist_bucket_low(b1 - 1) + d9a_hist_bucket_width(b1 - 1)};
        r.mid = r.low + (r.high - r.low) / 2;
        r.min = m == min_b ? h->min : r.low;
        r.max = m == max_b ? h->max : r.high - 1;
        int rc = fn(&r, ctx);
        if (rc) return rc;
    }
    return 0;
}
