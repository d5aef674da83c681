/* `dial9 diff --fail-on SPEC`: what turns a diff into a failed CI gate (exit 1, like `dial9
 * check`). SPEC is a comma-separated list of:
 *   regression      any group judged a regression
 *   new             any new offender (a group only in B)
 *   data-loss       either side lost data (drops, unreadable files, segments lost)
 *   p50=+X, p99=+X, mean=+X
 *                   a group whose p50 / p99 / mean rose by at least X: +20% (of A's) or +2ms
 *                   (ns, us, ms, s), significantly (the test of that quantile, docs/diff.md),
 *                   whatever the default change thresholds; two runs or windows only
 *   heap_inuse=+X   a heap allocation site whose bytes in use at the end rose by at least X:
 *                   +50% (of A's; from nothing breaks any) or +1MiB (B, KiB, MiB, GiB); two
 *                   runs with heap samples (diff_heap.h)
 * Parsing is all-or-nothing, with a message naming the bad item. */
#ifndef D9_ANALYSIS_DIFF_FAIL_ON_H
#define D9_ANALYSIS_DIFF_FAIL_ON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/diff.h"

#define D9D_FAIL_ITEMS 16

typedef enum d9d_fail_kind {
    D9D_FAIL_REGRESSION, D9D_FAIL_NEW, D9D_FAIL_DATA_LOSS, D9D_FAIL_P50, D9D_FAIL_P99, D9D_FAIL_MEAN,
    D9D_FAIL_HEAP_INUSE,
} d9d_fail_kind;

typedef struct d9d_fail_item {
    d9d_fail_kind kind;
    bool relative;   /* X is a percentage of A's value, else ns */
    double percent;
    uint64_t ns;
    uint64_t bytes;  /* heap_inuse: X in bytes, when not relative */
    char text[48];   /* the item as given */
} d9d_fail_item;

typedef struct d9d_fail_on {
    d9d_fail_item items[D9D_FAIL_ITEMS];
    size_t n;
} d9d_fail_on;

/* 0, or -1 with a message ("--fail-on: 'p99=20': ..."). */
int d9d_fail_on_parse(const char *spec, d9d_fail_on *out, char *err, size_t errlen);

/* Whether an item needs two runs or windows (it compares quantiles of the same group). */
bool d9d_fail_item_needs_durations(const d9d_fail_item *it);
/* Whether an item needs two runs (the heap is whole-run: two windows of one run have one). */
bool d9d_fail_item_needs_runs(const d9d_fail_item *it);

/* Test every item on a finished diff: broken[i] says whether item i broke, why[i] why (or why
 * not). Returns how many broke. */
size_t d9d_fail_on_check(const d9d_fail_on *f, const d9d_diff *d, bool broken[D9D_FAIL_ITEMS],
                         char why[D9D_FAIL_ITEMS][256]);

#endif
