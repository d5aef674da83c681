/* The significance tests of `dial9 diff` (docs/diff.md), on two duration histograms
 * (analysis/hist.h) instead of the raw values, so a side costs a few KiB whatever its number
 * of polls. Values in one bucket (0.4 % wide) count as ties. No resampling, no libm. */
#ifndef D9_ANALYSIS_DIFF_STATS_H
#define D9_ANALYSIS_DIFF_STATS_H

#include <stdint.h>

#include "analysis/hist.h"

/* Mann-Whitney U of B against A, as a z score (normal approximation, ties corrected, with a
 * continuity correction): > 0 when B's values tend to be larger. 0 when either side is empty
 * or every value is one tie. *superiority (may be NULL) gets U / (nA nB): the chance that a
 * value of B is larger than one of A, ties counting half (0.5: no shift). */
double d9d_mann_whitney_z(const d9a_hist *a, const d9a_hist *b, double *superiority);

/* The tail: the share of B's values above A's quantile q (by bucket) against A's own share
 * there, by a two-proportion z test (> 0: B has more of its values in A's tail), and the same
 * with the sides swapped (< 0: A has more in B's tail); the larger in size is returned. 0 when
 * either side is empty or no value lies above. */
double d9d_tail_z(const d9a_hist *a, const d9a_hist *b, double q);

/* Two proportions ka/na against kb/nb (pooled z test): > 0 when kb/nb is larger. 0 when na or
 * nb is 0, or the pooled proportion is 0 or 1. */
double d9d_proportion_z(uint64_t ka, uint64_t na, uint64_t kb, uint64_t nb);

/* sqrt without libm (the dial9 command links libc only: common/round.h says why). */
double d9d_sqrt(double x);

#endif
