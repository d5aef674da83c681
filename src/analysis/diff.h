/* `dial9 diff`: two sides of traces, A and B, compared group by group (docs/diff.md).
 *
 * A group is one thing the traces measure repeatedly, under a name: today the polls of each
 * spawn location. Each group has measures (today the poll's duration), one histogram per side
 * (analysis/hist.h). The table of groups and measures is diff_side.c's: the attribution parts
 * of a poll (on CPU, blocked, runnable, unknown) and span names are one line each there when
 * the model has them; this engine, the text, the JSON and --fail-on take them as they come.
 *
 *     d9d_diff *d = d9d_new(D9D_RUNS, &opt);
 *     d9d_add(d, "spawn_location", name, "poll_ns", &hist_a, &hist_b);   // per group
 *     d9d_finish(d);   // verdicts, ranked: regressions, new, improvements, ...
 */
#ifndef D9_ANALYSIS_DIFF_H
#define D9_ANALYSIS_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/hist.h"

typedef enum d9d_mode {
    D9D_RUNS,    /* two recordings */
    D9D_WINDOWS, /* two time windows of one recording */
    D9D_SLOWEST, /* B: the slowest polls, A: the rest (one recording) */
} d9d_mode;

/* What counts as a change (defaults in d9d_options_init, reasons in docs/diff.md). */
typedef struct d9d_options {
    double relative_pct; /* 10: a quantile moved by at least 10 % of A's value ... */
    uint64_t abs_ns;   /* 20 us: ... and by at least this much */
    uint64_t min_polls; /* 20: fewer values on a side are not judged */
    uint64_t tail_min_polls; /* 1000: the p99 is judged with at least this many a side */
    double z;          /* 3.29: |z| of the test (two-sided p < 0.001) */
} d9d_options;

void d9d_options_init(d9d_options *o);

typedef enum d9d_verdict {
    D9D_REGRESSION,   /* B is slower, significantly and by more than the thresholds */
    D9D_NEW,          /* only in B (at least min_polls values) */
    D9D_IMPROVEMENT,  /* B is faster */
    D9D_GONE,         /* only in A */
    D9D_MISSING_DATA, /* only on one side, and the other side lost data: not judged */
    D9D_TOO_FEW,      /* fewer than min_polls values on a side */
    D9D_UNCHANGED,
    D9D_VERDICTS
} d9d_verdict;

const char *d9d_verdict_name(d9d_verdict v); /* "regression", "new", ... as in the JSON */

/* One side of one measure. */
typedef struct d9d_values {
    uint64_t count, total_ns, mean_ns, p50_ns, p99_ns, max_ns;
} d9d_values;

typedef struct d9d_row {
    const char *kind;    /* "spawn_location" */
    const char *name;
    const char *measure; /* "poll_ns" */
    d9d_values a, b;
    double z_center;     /* Mann-Whitney (runs, windows); 0 when not computed */
    double z_tail;       /* share above the pooled p99 (runs, windows) */
    double z_share;      /* share of the side's values (slowest) */
    double superiority;  /* P(a value of B > one of A), ties half */
    d9d_verdict verdict;
    char reason[200];    /* why, in words */
    uint64_t impact_ns;  /* what the ranking sorts by (docs/diff.md) */
} d9d_row;

/* What a side is and what it lacks, for the reader to weigh the rows. */
typedef struct d9d_side {
    const char *label;       /* what the user named: paths, window */
    uint64_t start_ns, end_ns, duration_ns;
    bool windowed;
    uint64_t events, polls;
    uint64_t dropped;        /* DroppedEvents, all reasons */
    uint64_t unmatched_polls; /* starts or ends without their pair */
    bool readable;           /* every file read to its end */
    uint64_t upload_lost_segments;
    const char *partial[8];  /* governed sources recorded partially (CoverageEvent) */
    size_t npartial;
    bool lost_data;          /* dropped, unreadable or segments lost: counts may be short */
} d9d_side;

typedef struct d9d_diff {
    d9d_mode mode;
    d9d_options opt;
    d9d_side side[2];  /* A, B */
    /* --slowest: the fraction asked and where B starts */
    double slowest_fraction;
    uint64_t slowest_threshold_ns;
    d9d_row *rows;     /* ranked after d9d_finish */
    d9a_hist *hists;   /* 2 per row (A, B), owned */
    size_t nrows, cap;
    uint64_t totals[2]; /* values per side over all groups of the first measure (--slowest) */
    size_t verdict_counts[D9D_VERDICTS];
    bool failed;       /* out of memory */
    const struct d9d_heap *heap; /* the heap section (diff_heap.h): two runs with samples, else NULL */
} d9d_diff;

d9d_diff *d9d_new(d9d_mode mode, const d9d_options *opt);
/* A group's measure on both sides (a or b NULL: absent there). The histograms are copied.
 * 0, or -1 when out of memory. */
int d9d_add(d9d_diff *d, const char *kind, const char *name, const char *measure, const d9a_hist *a,
            const d9a_hist *b);
/* Judge every row and rank them: regressions, new, improvements, gone, missing data, too few,
 * unchanged; within each by impact, then name. */
void d9d_finish(d9d_diff *d);
void d9d_free(d9d_diff *d);

#endif
