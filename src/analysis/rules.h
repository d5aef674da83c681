/* Pass/fail rules over an analysis report, for `dial9 check` (CI, canaries): each rule names a
 * quantity of the report and a limit; a broken rule comes with a one-line reason that says
 * what was measured, the limit, and where to look. */
#ifndef D9_ANALYSIS_RULES_H
#define D9_ANALYSIS_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

typedef enum d9a_rule_kind {
    D9A_RULE_MAX_POLL,        /* longest poll <= limit ns */
    D9A_RULE_MAX_POLL_P99,    /* p99 poll duration <= limit ns */
    D9A_RULE_MAX_SCHED,       /* largest sched_wait_ns <= limit ns */
    D9A_RULE_MAX_SCHED_P99,
    D9A_RULE_MAX_WAKE,        /* largest wake-to-poll delay <= limit ns */
    D9A_RULE_MAX_WAKE_P99,
    D9A_RULE_MAX_DROPPED,     /* dropped events <= limit */
    D9A_RULE_MAX_BLOCKING,    /* off-CPU samples inside polls (blocked, not preempted) <= limit */
    D9A_RULE_MAX_LIVE_TASKS,  /* tasks alive at the end <= limit */
    D9A_RULE_MIN_EVENTS,      /* events >= limit */
    D9A_RULE_REQUIRE_SOURCE,  /* data source `source` present */
    D9A_RULE_FAIL_ON,         /* no red flag of severity >= limit (a d9a_severity) */
} d9a_rule_kind;

typedef struct d9a_rule {
    d9a_rule_kind kind;
    uint64_t limit;
    const char *source; /* REQUIRE_SOURCE */
} d9a_rule;

typedef struct d9a_rule_result {
    bool ok;
    const char *name;   /* the option that set it, e.g. "max-poll-ms" */
    uint64_t actual;    /* the measured value (ns, count, or severity) */
    bool is_ns;         /* limit and actual are durations */
    char reason[600];   /* one line: measured vs limit, where */
} d9a_rule_result;

/* Evaluate rules[0..n) into out[0..n); returns how many broke. */
size_t d9a_check_rules(const d9a_report *r, const d9a_rule *rules, size_t n, d9a_rule_result *out);

#endif
