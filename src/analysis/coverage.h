/* Coverage of the governed sources (CoverageEvent, docs/schemas.md): which periods of the
 * trace a source recorded partially (sampled or paused by the cost governor), so readers say
 * "not recorded" there instead of "nothing happened". Self-contained: the tracker is fed the
 * records in any order per source (they are sorted at the end) and clips periods to a window. */
#ifndef D9_ANALYSIS_COVERAGE_H
#define D9_ANALYSIS_COVERAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define D9A_COV_SOURCES 8

typedef struct d9a_coverage_period {
    const char *source; /* "off_cpu" */
    const char *mode;   /* "no_stacks", "sampled", "paused" (full periods are not listed) */
    uint32_t one_in;    /* N of a sampled period, 1 no_stacks, 0 paused */
    uint64_t from_ns, to_ns;
} d9a_coverage_period;

/* One governed source over the analyzed time. */
typedef struct d9a_coverage_source {
    const char *name;
    bool partial;          /* some of the analyzed time was not fully recorded */
    uint64_t covered_ns;   /* analyzed time the records say anything about */
    uint64_t full_ns, no_stacks_ns, sampled_ns, paused_ns;
    uint64_t changes;      /* mode changes */
} d9a_coverage_source;

typedef struct d9a_cov_change {
    uint64_t ts;
    uint8_t src, mode;
    uint32_t one_in;
    uint32_t seq; /* order of arrival: ties in time keep it */
} d9a_cov_change;

typedef struct d9a_coverage {
    char names[D9A_COV_SOURCES][32];
    size_t nnames;
    d9a_cov_change *changes;
    size_t nchanges, cap;
    bool failed;
} d9a_coverage;

/* A CoverageEvent: `source` in `mode` (1 in `one_in`) from `ts` on. */
void d9a_coverage_add(d9a_coverage *c, uint64_t ts, const char *source, size_t source_len, const char *mode,
                      size_t mode_len, uint64_t one_in);
/* Sources and partial periods within [from, to) (the trace ends at `to`). Arrays are malloc'ed
 * (the caller frees them); NULL/0 when there were no coverage records. -1 when out of memory. */
int d9a_coverage_report(d9a_coverage *c, uint64_t from, uint64_t to, d9a_coverage_source **sources, size_t *nsources,
                        d9a_coverage_period **periods, size_t *nperiods);
void d9a_coverage_free(d9a_coverage *c);

#endif
