/* What `dial9 diff` compares, taken from finished analyses (analysis.h): a side's coverage,
 * and the groups with their measures, by one table (diff_side.c) so that a new group kind or
 * measure is one line there. */
#ifndef D9_ANALYSIS_DIFF_SIDE_H
#define D9_ANALYSIS_DIFF_SIDE_H

#include <stdbool.h>

#include "analysis/analysis.h"
#include "analysis/diff.h"

/* The side's summary from its report; `label` (what the user named) must outlive it. */
void d9d_side_from(d9d_side *s, const d9a_report *r, bool readable, const char *label);

/* Every group of every kind, A's values against B's, matched by name. 0, or -1 when out of
 * memory. */
int d9d_add_groups(d9d_diff *d, const d9a_analysis *a, const d9a_analysis *b);

/* --slowest: one analysis split into B, the polls at or above the bucket (0.8 % wide at most)
 * of the quantile 1 - fraction of every poll, and A, the rest; sets the diff's threshold. 0, or
 * -1 when out of memory. */
int d9d_add_groups_slowest(d9d_diff *d, const d9a_analysis *a, double fraction);

#endif
