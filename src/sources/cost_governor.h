/* The CPU cost governor (DIAL9_OVERHEAD_BUDGET_PCT): keeps the kernel sources' estimated cost
 * within a share of one CPU. The cost is estimated from rates measured at run time (context
 * switches of the process, CPU samples read, schedstat reads) times a cost per unit calibrated
 * by bench/sources/bench_governor.c (its "parts" table; the constants below; not calibrated
 * at start: a calibration would need a switching workload of its own at every start, ~100 ms
 * of CPU, and its answer depends on the host's load at that moment).
 *
 * The context-switch source degrades in steps, one level index each:
 *   0 full        switch intervals and context-switch stacks (paced: stacks_per_sec, or with
 *                 thin_stacks_at_full what the budget leaves after the records)
 *   1..5 sampled  intervals AND stacks during one 50 ms window in N (N = 2, 4, 8, 16, 32),
 *                 the stacks paced at stacks_per_sec / N (d9_gov_stacks_rate: one N-th of
 *                 everything the full level records, stacks included; the bucket gathers them
 *                 into the windows); between windows the events are closed where that is
 *                 cheaper than keeping them open (d9_gov_closes_between: the perf context saved
 *                 over the closed time against a measured close + reopen per window and the
 *                 empty contexts left behind, costs.closed_context), else open and disabled
 *   6 paused      nothing: the switch and stacks events are closed, and the rings' hosts
 *                 with them, so the perf context's floor goes too (unless the perf CPU
 *                 profile's events keep a context on the threads: paused_keeps_context);
 *                 opened again on every thread when it leaves
 * Stacks thin out with the records rather than before them: a stack is only worth something
 * with the switch records around it (which switch it was, how long the thread stayed off CPU),
 * so a sampled level is one N-th of the full level in every respect (docs/kernel-sources.md,
 * "Cost governor", the numbers behind it).
 * It comes back one level at a time once the better level's estimate has stayed below
 * D9_GOV_RECOVER_SHARE of the budget for D9_GOV_RECOVER_TICKS evaluations in a row.
 * d9_gov_step is pure (no clock, no system call) so the decisions are tested with synthetic
 * rates (tests/unit/test_source_governor.c). */
#ifndef D9_SOURCES_COST_GOVERNOR_H
#define D9_SOURCES_COST_GOVERNOR_H

#include <stdbool.h>
#include <stdint.h>

/* Calibrated costs, ns of CPU (kernel + collector) per unit; `d9_bench_governor` measures
 * them (its "parts" table; docs/kernel-sources.md, "Cost governor"). Data, not policy: the
 * decisions below take them from their input, so a test can pin its own table. */
typedef struct d9_gov_costs {
    /* Per context switch of a thread of the process (a switch-out and its switch-in): */
    double context; /* the perf context on the task, events enabled or not */
    double records; /* two PERF_RECORD_SWITCH (kernel) + reading/encoding them */
    double stack;   /* one context-switch stack, the kernel's part: call chain, registers, 2 KiB
                     * stack copy, and reading it from the ring */
    double stack_unwind; /* ours, per stack unwound: CFI unwind, interning, encoding (only the
                          * stacks of switches inside polls are: stacks_unwound_share) */
    double cpu_sample; /* one CPU profile sample, likewise */
    double schedstat;  /* one read of /proc/thread-self/schedstat at a park or unpark */
    /* Per context switch while a sampled level's events are closed between its windows: a
     * closed event leaves its (empty) perf context on the thread, and the kernel still runs
     * its switch hooks over it while any per-thread event (the rings' hosts, host_ring in
     * perf_events.c) exists, and for a second after the last one goes: */
    double closed_context;
    /* Per context switch in a window of a level that closes its events between windows, in
     * place of `context`: the events opened again on each thread are not clones of one context
     * (as the events inherited from the start are), so the kernel cannot swap the contexts of
     * the two threads of a switch and schedules their events out and in instead: */
    double window_context;
} d9_gov_costs;

/* This machine kind's, measured on a quiet host (2-vCPU KVM guest, 2026-12-02). */
extern const d9_gov_costs d9_gov_costs_measured;

#define D9_GOV_LEVEL_FULL 0
#define D9_GOV_LEVEL_SAMPLED_FIRST 1 /* 1 in 2 */
#define D9_GOV_LEVEL_SAMPLED_LAST 5  /* 1 in 32 */
#define D9_GOV_LEVEL_PAUSED 6
#define D9_GOV_LEVELS 7

#define D9_GOV_PERIOD_NS 250000000ull /* one evaluation per 250 ms of recording */
#define D9_GOV_WINDOW_NS 50000000ull  /* a sampled level records one 50 ms window in N */
#define D9_GOV_RECOVER_SHARE 0.7      /* come back only well below the budget (hysteresis) */
#define D9_GOV_RECOVER_TICKS 4        /* ... for 1 s in a row */

/* What one evaluation sees, measured over the last period. */
typedef struct d9_gov_input {
    double budget_ns_per_s;   /* DIAL9_OVERHEAD_BUDGET_PCT x 1e7; <= 0: not governed */
    double switches_per_s;    /* context switches of the process (getrusage), any level */
    double stacks_cap_per_s;  /* context-switch stacks at most (their pacing); 0 when unavailable */
    double stacks_unwound_share; /* of the stacks the kernel took, the share unwound (those of switches
                                  * inside polls), measured over the last period; 0..1 */
    double cpu_samples_per_s; /* CPU profile samples read (not degraded: DIAL9_CPU_SAMPLE_HZ fixes them) */
    double schedstat_per_s;   /* schedstat reads (not degraded: DIAL9_SCHEDSTAT_RESOLUTION_US bounds them) */
    bool paused_keeps_context; /* closing the switch events still leaves a perf context on the threads
                                * (other per-thread events stay open: the perf CPU profile's, or the
                                * stacks' when they could not be opened again, as after a privilege
                                * drop), so the floor stays, paused or between windows */
    bool closing_allowed;     /* the source may close the events between a sampled level's windows */
    double reopen_ns;         /* CPU of closing them and opening them again once, as measured by the
                               * source (its open at start, then each close and reopen) */
    bool thin_stacks_at_full; /* the full level paces the stacks at what the budget leaves after the
                               * records (d9_gov_full_stacks_rate), down to D9_GOV_MIN_FULL_STACKS,
                               * before it samples the records */
    d9_gov_costs costs;       /* the cost of each unit (d9_gov_costs_measured) */
} d9_gov_input;

typedef struct d9_gov_state {
    int level;       /* D9_GOV_LEVEL_* */
    int calm_ticks;  /* evaluations in a row in which the level above fitted the recovery share */
} d9_gov_state;

/* Estimated ns of CPU per second at `level` for `in`'s rates, run the cheaper way (events
 * closed between windows when d9_gov_closes_between says so). */
double d9_gov_estimate(const d9_gov_input *in, int level);
/* ... run one given way: `closed_between` = the events closed outside the windows, paying a
 * close and a reopen (in->reopen_ns) per window (meaningful at a sampled level only). */
double d9_gov_estimate_as(const d9_gov_input *in, int level, bool closed_between);
/* At a sampled level, is closing the events between windows cheaper than keeping them open?
 * (d9_gov_estimate_as both ways: the context saved over the closed time against a close and a
 * reopen per window, the windows' dearer context and the empty contexts between them; never
 * when closing leaves the context: paused_keeps_context) */
bool d9_gov_closes_between(const d9_gov_input *in, int level);
/* The context-switch stacks' pacing at `level`, stacks a second: `stacks_per_sec` at full,
 * one N-th of it at a sampled level, 0 when paused. */
double d9_gov_stacks_rate(double stacks_per_sec, int level);
/* With thin_stacks_at_full: the full level keeps every switch record while the budget leaves
 * this many stacks a second after them, and paces the stacks at what it leaves (the records
 * are what places an off-CPU interval; the stacks at every switch of a parked worker were half
 * of the budget at the demo's 2-4 k switches/s). */
#define D9_GOV_MIN_FULL_STACKS 50.0
/* The stacks a second the full level paces at: stacks_cap_per_s, or with thin_stacks_at_full
 * what the budget leaves after the context, the records and the fixed costs (0 when nothing). */
double d9_gov_full_stacks_rate(const d9_gov_input *in);
/* Windows a second at a sampled level (1 / (N x D9_GOV_WINDOW_NS)); 0 at full and paused. */
double d9_gov_windows_per_s(int level);
/* One evaluation: moves `st` down at once to the first level whose estimate fits the budget
 * (paused when none does), or up one level after D9_GOV_RECOVER_TICKS calm evaluations.
 * Returns true when the level changed. */
bool d9_gov_step(d9_gov_state *st, const d9_gov_input *in);

/* What the sources the governor does not degrade cost (CPU samples, schedstat), ns/s. */
double d9_gov_fixed_ns(const d9_gov_input *in);
/* 1 for full, N for sampled, 0 for paused. */
uint32_t d9_gov_one_in(int level);
/* "full", "sampled", "paused" (the CoverageEvent's mode; traces of 0.2 may also say
 * "no_stacks", a level this governor no longer uses). */
const char *d9_gov_mode_name(int level);
/* In a sampled level, is the window that contains `now_ns` recorded? (the first of every N) */
bool d9_gov_window_on(int level, uint64_t now_ns);

#endif
