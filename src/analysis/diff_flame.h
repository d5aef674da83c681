/* `dial9 diff --flame OUT`: the differential flame graph of two analyses, in the two-column
 * folded form flamegraph's difffolded.pl writes and flamegraph.pl draws as a differential
 * graph: "cpu;root;...;leaf A B" per line, with A's and B's sample counts of that stack (CPU
 * samples under a "cpu" root frame, off-CPU samples under "off-cpu"). docs/diff.md. */
#ifndef D9_ANALYSIS_DIFF_FLAME_H
#define D9_ANALYSIS_DIFF_FLAME_H

#include <stdio.h>

#include "analysis/analysis.h"

/* Lines sorted by stack, stacks with no sample on either side left out. 0, or -1 when out of
 * memory or a write failed. Both analyses finished. */
int d9d_write_flame(FILE *out, const d9a_analysis *a, const d9a_analysis *b);

#endif
