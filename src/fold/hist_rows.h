/* poll_hist's buckets (docs/fleet-tables.md): analyze's log buckets (analysis/hist.h) merged
 * D9F_HIST_MERGE at a time, so a power of two is split into 16 buckets, not 128. A fleet's
 * poll_hist then has a quarter of the rows (a group of a few hundred polls fills most of its
 * buckets either way), and a percentile read from it is within half a bucket of analyze's:
 * 1/32 of the value (4 ns below 128 ns). For the fold and the fleet benchmark's generator. */
#ifndef D9_FOLD_HIST_ROWS_H
#define D9_FOLD_HIST_ROWS_H

#include <stdint.h>

#include "analysis/hist.h"

#define D9F_HIST_MERGE 8

typedef struct d9f_hist_row {
    int32_t bucket;             /* analyze's bucket index / D9F_HIST_MERGE */
    uint64_t low, high, mid;    /* [low, high); mid = low + (high - low) / 2 */
    uint64_t count;
    uint64_t min, max;          /* the exact min (max) of h when it lies here, else the bounds */
} d9f_hist_row;

/* Calls fn for each non-empty merged bucket of h, lowest first; stops at fn's first non-zero
 * return and returns it. */
int d9f_hist_rows(const d9a_hist *h, int (*fn)(const d9f_hist_row *row, void *ctx), void *ctx);

#endif
