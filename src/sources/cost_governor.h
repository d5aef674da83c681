/* The CPU cost governor (DIAL9_OVERHEAD_BUDGET_PCT): keeps the kernel sources' estimated cost
 * within a share of one CPU. The cost is estimated from rates measured at run time times a
 * cost per record calibrated by bench/sources/bench_governor.c on the reference VM (the table
 * below; not calibrated at start: a calibration would need a switching workload of its own at
 * every start, ~100 ms of CPU, and its answer depends on the host's load at that moment).
 *
 * The context-switch source degrades in steps, one level index each:
 *   0 full        switch intervals and context-switch stacks
 *   1 no_stacks   switch intervals only
 *   2..6 sampled  switch intervals during one window in N (N = 2, 4, 8, 16, 32)
 *   7 paused      nothing (the perf context's floor stays: the events stay open)
 * and comes back one level at a time once the better level's estimate has stayed below
 * D9_GOV_RECOVER_SHARE of the budget for D9_GOV_RECOVER_TICKS evaluations in a row.
 * d9_gov_step is pure (no clock, no system call) so the decisions are tested with synthetic
 * rates (tests/unit/test_source_governor.c). */
#ifndef D9_SOURCES_COST_GOVERNOR_H
#define D9_SOURCES_COST_GOVERNOR_H

#include <stdbool.h>
#include <stdint.h>

/* Calibrated costs, ns of CPU (kernel + collector) per unit; bench/sources/bench_governor.c
 * measures them (docs/kernel-sources.md, "Cost governor"). Per context switch of a thread of
 * the process (a switch-out and its switch-in): */
#define D9_GOV_NS_CONTEXT 300u   /* the perf context on the task, events enabled or not */
#define D9_GOV_NS_RECORDS 1100u  /* two PERF_RECORD_SWITCH (kernel ~880) + reading/encoding them (~220) */
#define D9_GOV_NS_STACK 5000u    /* one context-switch call chain: kernel unwind, 2 KiB stack copy, CFI unwind */
#define D9_GOV_NS_CPU_SAMPLE 5000u /* one CPU profile sample, likewise */

#define D9_GOV_LEVEL_FULL 0
#define D9_GOV_LEVEL_NO_STACKS 1
#define D9_GOV_LEVEL_SAMPLED_FIRST 2 /* 1 in 2 */
#define D9_GOV_LEVEL_SAMPLED_LAST 6  /* 1 in 32 */
#define D9_GOV_LEVEL_PAUSED 7
#define D9_GOV_LEVELS 8

#define D9_GOV_PERIOD_NS 250000000ull /* one evaluation per 250 ms of recording */
#define D9_GOV_WINDOW_NS 50000000ull  /* a sampled level records one 50 ms window in N */
#define D9_GOV_RECOVER_SHARE 0.7      /* come back only well below the budget (hysteresis) */
#define D9_GOV_RECOVER_TICKS 4        /* ... for 1 s in a row */

/* What one evaluation sees, measured over the last period. */
typedef struct d9_gov_input {
    double budget_ns_per_s;   /* DIAL9_OVERHEAD_BUDGET_PCT x 1e7; <= 0: not governed */
    double switches_per_s;    /* context switches of the process (getrusage), any level */
    double stacks_cap_per_s;  /* context-switch stacks at most (their pacing); 0 when unavailable */
    double fixed_ns_per_s;    /* what the governor does not degrade: CPU samples x their cost */
} d9_gov_input;

typedef struct d9_gov_state {
    int level;       /* D9_GOV_LEVEL_* */
    int calm_ticks;  /* evaluations in a row in which the level above fitted the recovery share */
} d9_gov_state;

/* Estimated ns of CPU per second at `level` for `in`'s rates. */
double d9_gov_estimate(const d9_gov_input *in, int level);
/* One evaluation: moves `st` down at once to the first level whose estimate fits the budget
 * (paused when none does), or up one level after D9_GOV_RECOVER_TICKS calm evaluations.
 * Returns true when the level changed. */
bool d9_gov_step(d9_gov_state *st, const d9_gov_input *in);

/* 1 for full and no_stacks, N for sampled, 0 for paused. */
uint32_t d9_gov_one_in(int level);
/* "full", "no_stacks", "sampled", "paused" (the CoverageEvent's mode). */
const char *d9_gov_mode_name(int level);
/* In a sampled level, is the window that contains `now_ns` recorded? (the first of every N) */
bool d9_gov_window_on(int level, uint64_t now_ns);

#endif
