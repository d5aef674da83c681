/* The cost governor's decisions (src/sources/cost_governor.c) on synthetic rates: no clock,
 * no kernel, so every expectation is exact.
 *  - the estimate per level follows the calibrated table: a sampled level divides the records
 *    by N, the stacks are taken in the same windows up to their pacing, CPU samples and
 *    schedstat reads count at every level;
 *  - paused costs only what is not degraded: its events are closed, so the perf context's floor
 *    goes too, unless other per-thread events (the perf CPU profile's) keep a context;
 *  - 40 k switches/s under the default 1 % budget: the first evaluation goes straight to the
 *    first level that fits (paused: the perf context of the sampled levels alone is 1.2 %), 20 k/s to
 *    sampled 1 in 16, 10 k/s to 1 in 4, 6 k/s to 1 in 2 (stacks kept in the windows), 3 k/s
 *    stays full;
 *  - the way back is one level at a time, only after D9_GOV_RECOVER_TICKS calm evaluations in
 *    a row below D9_GOV_RECOVER_SHARE of the budget; a rate between that share and the budget
 *    holds the level (hysteresis), and a burst resets the count;
 *  - budget 0 is not governed; the window of a sampled level is one in N;
 *  - closing the events between a sampled level's windows: chosen per level where the context
 *    it saves over the closed time exceeds the measured close + reopen per window (at 20 k
 *    switches/s and 1 ms a reopen: 1 in 8, 16, 32, not 1 in 2 or 4; 0.1 ms: from 1 in 2;
 *    10 ms: never), never when not allowed or when the CPU profile keeps the context anyway;
 *    the estimate counts the reopens, and the governor then stops at 1 in 8 at 20 k/s (1 in 16
 *    without closing) and samples 1 in 16 at 40 k/s instead of pausing, unless reopens cost
 *    too much. */
#include "check.h"
#include "sources/cost_governor.h"

#define BUDGET_1PCT 1e7 /* ns of CPU per second */

/* A table of the test's own (the first calibration's, from an earlier host), so that every
 * expectation below is exact whatever d9_gov_costs_measured says for this machine kind. */
#define NS_CONTEXT 300.0
#define NS_RECORDS 1100.0
#define NS_STACK 5000.0
#define NS_CPU_SAMPLE 5000.0
#define NS_SCHEDSTAT 1000.0
#define NS_CLOSED_CONTEXT 100.0
#define NS_WINDOW_CONTEXT 600.0
static const d9_gov_costs k_costs = {.context = NS_CONTEXT, .records = NS_RECORDS,
                                     .stack = NS_STACK, .cpu_sample = NS_CPU_SAMPLE,
                                     .schedstat = NS_SCHEDSTAT, .closed_context = NS_CLOSED_CONTEXT,
                                     .window_context = NS_WINDOW_CONTEXT};

static d9_gov_input rates(double budget, double switches) {
    d9_gov_input in = {.budget_ns_per_s = budget, .switches_per_s = switches, .stacks_cap_per_s = 500,
                       .cpu_samples_per_s = 0, .schedstat_per_s = 0, .costs = k_costs};
    return in;
}

static void test_estimates(void) {
    d9_gov_input in = rates(BUDGET_1PCT, 20000);
    /* full: context + records + 500 stacks/s */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 20000.0 * (NS_CONTEXT + NS_RECORDS) + 500.0 * NS_STACK);
    /* 1 in 2: records and stacks halved (the stacks paced at half the rate), the context whole */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_SAMPLED_FIRST) ==
          20000.0 * NS_CONTEXT + 20000.0 * NS_RECORDS / 2 + 500.0 / 2 * NS_STACK);
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_SAMPLED_LAST) ==
          20000.0 * NS_CONTEXT + 20000.0 * NS_RECORDS / 32 + 500.0 / 32 * NS_STACK);
    CHECK(d9_gov_stacks_rate(500, D9_GOV_LEVEL_FULL) == 500);
    CHECK(d9_gov_stacks_rate(500, D9_GOV_LEVEL_SAMPLED_LAST) == 500.0 / 32);
    CHECK(d9_gov_stacks_rate(500, D9_GOV_LEVEL_PAUSED) == 0);
    /* paused closes the events: no perf context left, unless the CPU profile's events keep one */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_PAUSED) == 0);
    in.paused_keeps_context = true;
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_PAUSED) == 20000.0 * NS_CONTEXT);
    /* ... which changes nothing at the levels that keep the events open */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_SAMPLED_LAST) ==
          20000.0 * NS_CONTEXT + 20000.0 * NS_RECORDS / 32 + 500.0 / 32 * NS_STACK);
    /* fewer switches than the pacing allows: a stack per switch in the windows */
    in = rates(BUDGET_1PCT, 400);
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_SAMPLED_FIRST + 1) ==
          400.0 * NS_CONTEXT + 400.0 * NS_RECORDS / 4 + 400.0 / 4 * NS_STACK);
    /* fewer switches than the stacks' cap: a stack per switch */
    in = rates(BUDGET_1PCT, 100);
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 100.0 * (NS_CONTEXT + NS_RECORDS + NS_STACK));
    /* no stacks available: the context and the records alone */
    in.stacks_cap_per_s = 0;
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 100.0 * (NS_CONTEXT + NS_RECORDS));
    /* what is not degraded (CPU samples, schedstat reads) counts at every level */
    in.cpu_samples_per_s = 10;
    in.schedstat_per_s = 100;
    double fixed = 10.0 * NS_CPU_SAMPLE + 100.0 * NS_SCHEDSTAT;
    CHECK(d9_gov_fixed_ns(&in) == fixed);
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_PAUSED) == fixed);
    in.paused_keeps_context = true;
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_PAUSED) == 100.0 * NS_CONTEXT + fixed);
    in.paused_keeps_context = false;
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 100.0 * (NS_CONTEXT + NS_RECORDS) + fixed);
    /* every level is cheaper than the one before at a high rate */
    in = rates(BUDGET_1PCT, 40000);
    for (int l = 1; l < D9_GOV_LEVELS; l++) CHECK(d9_gov_estimate(&in, l) < d9_gov_estimate(&in, l - 1));
}

static void test_names(void) {
    CHECK_STR(d9_gov_mode_name(D9_GOV_LEVEL_FULL), "full");
    CHECK_STR(d9_gov_mode_name(D9_GOV_LEVEL_SAMPLED_FIRST), "sampled");
    CHECK_STR(d9_gov_mode_name(D9_GOV_LEVEL_SAMPLED_LAST), "sampled");
    CHECK_STR(d9_gov_mode_name(D9_GOV_LEVEL_PAUSED), "paused");
    CHECK_EQ_U64(d9_gov_one_in(D9_GOV_LEVEL_FULL), 1);
    CHECK_EQ_U64(d9_gov_one_in(D9_GOV_LEVEL_SAMPLED_FIRST), 2);
    CHECK_EQ_U64(d9_gov_one_in(D9_GOV_LEVEL_SAMPLED_FIRST + 2), 8);
    CHECK_EQ_U64(d9_gov_one_in(D9_GOV_LEVEL_SAMPLED_LAST), 32);
    CHECK_EQ_U64(d9_gov_one_in(D9_GOV_LEVEL_PAUSED), 0);
}

static void test_windows(void) {
    int l8 = D9_GOV_LEVEL_SAMPLED_FIRST + 2;
    int on = 0;
    for (uint64_t w = 0; w < 64; w++) on += d9_gov_window_on(l8, w * D9_GOV_WINDOW_NS + 1);
    CHECK_EQ_U64(on, 8); /* one window in 8 */
    CHECK(d9_gov_window_on(l8, 0));
    CHECK(!d9_gov_window_on(l8, D9_GOV_WINDOW_NS));
    CHECK(d9_gov_window_on(l8, 8 * D9_GOV_WINDOW_NS));
    CHECK(!d9_gov_window_on(D9_GOV_LEVEL_PAUSED, 0));
}

static int settle(double switches) {
    d9_gov_state st = {0, 0};
    d9_gov_input in = rates(BUDGET_1PCT, switches);
    d9_gov_step(&st, &in);
    return st.level;
}

static void test_degrade_at_once(void) {
    CHECK_EQ_U64(settle(500), D9_GOV_LEVEL_FULL);  /* 0.32 % */
    CHECK_EQ_U64(settle(3000), D9_GOV_LEVEL_FULL); /* 0.67 % */
    CHECK_EQ_U64(settle(6000), D9_GOV_LEVEL_SAMPLED_FIRST); /* full 1.09 %, 1 in 2 0.635 % */
    CHECK_EQ_U64(settle(10000), D9_GOV_LEVEL_SAMPLED_FIRST); /* the stories' rate: 1 in 2 0.975 % */
    /* fixed costs push it further: 10 k switches/s and 2 000 schedstat reads/s (0.2 %) */
    d9_gov_state fs = {0, 0};
    d9_gov_input fin = rates(BUDGET_1PCT, 10000);
    fin.schedstat_per_s = 2000;
    d9_gov_step(&fs, &fin);
    CHECK_EQ_U64(fs.level, D9_GOV_LEVEL_SAMPLED_FIRST + 1); /* 1 in 4: 0.8375 % */
    CHECK_EQ_U64(settle(20000), D9_GOV_LEVEL_SAMPLED_FIRST + 2); /* 1 in 8: 0.6 + 0.275 + 0.03 % */
    CHECK_EQ_U64(settle(40000), D9_GOV_LEVEL_PAUSED); /* 1 in 32: the open events' context alone is 1.2 % */
    /* a change is reported, staying is not */
    d9_gov_state st = {0, 0};
    d9_gov_input in = rates(BUDGET_1PCT, 20000);
    CHECK(d9_gov_step(&st, &in));
    CHECK(!d9_gov_step(&st, &in));
    /* a faster rate degrades further from where it is */
    in.switches_per_s = 40000;
    CHECK(d9_gov_step(&st, &in));
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_PAUSED);
}

/* With the perf CPU profile on, paused keeps the context: 40 k switches/s is still paused, and
 * its estimate says that paused is over the budget (the CoverageEvent's cost_ppm > budget_ppm);
 * closed, paused costs what is not degraded alone. */
static void test_paused_floor(void) {
    d9_gov_state st = {0, 0};
    d9_gov_input in = rates(BUDGET_1PCT, 40000);
    in.paused_keeps_context = true;
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_PAUSED);
    CHECK(d9_gov_estimate(&in, st.level) > BUDGET_1PCT);
    in.paused_keeps_context = false;
    CHECK(d9_gov_estimate(&in, st.level) == 0);
    /* the way back depends on the level above paused, whose events are open either way */
    in.switches_per_s = 100;
    for (int i = 0; i < D9_GOV_RECOVER_TICKS - 1; i++) CHECK(!d9_gov_step(&st, &in));
    CHECK(d9_gov_step(&st, &in));
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_SAMPLED_LAST);
}

static void test_recovery_with_hysteresis(void) {
    d9_gov_state st = {0, 0};
    d9_gov_input in = rates(BUDGET_1PCT, 40000);
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_PAUSED);
    /* the rate falls to 100/s: up one level per D9_GOV_RECOVER_TICKS evaluations */
    in.switches_per_s = 100;
    int changes = 0, evaluations = 0;
    while (st.level != D9_GOV_LEVEL_FULL && evaluations < 1000) {
        int before = st.level;
        bool changed = d9_gov_step(&st, &in);
        evaluations++;
        if (changed) {
            changes++;
            CHECK_EQ_U64(st.level, before - 1);
        }
    }
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_FULL);
    CHECK_EQ_U64(changes, D9_GOV_LEVEL_PAUSED);
    CHECK_EQ_U64(evaluations, D9_GOV_LEVEL_PAUSED * D9_GOV_RECOVER_TICKS);

    /* hysteresis: at 1 in 2, a rate at which full would fit the budget but not the
     * recovery share stays at 1 in 2 for ever */
    st = (d9_gov_state){D9_GOV_LEVEL_SAMPLED_FIRST, 0};
    double r = 5000; /* full: 5000 x 1400 + 2.5e6 = 9.5e6 <= 1e7, > 7e6 */
    in = rates(BUDGET_1PCT, r);
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) <= BUDGET_1PCT);
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) > BUDGET_1PCT * D9_GOV_RECOVER_SHARE);
    for (int i = 0; i < 100; i++) CHECK(!d9_gov_step(&st, &in));
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_SAMPLED_FIRST);

    /* a burst between calm evaluations restarts the count */
    st = (d9_gov_state){D9_GOV_LEVEL_SAMPLED_FIRST, 0};
    d9_gov_input calm = rates(BUDGET_1PCT, 100), busy = rates(BUDGET_1PCT, 5000);
    for (int i = 0; i < D9_GOV_RECOVER_TICKS - 1; i++) CHECK(!d9_gov_step(&st, &calm));
    CHECK(!d9_gov_step(&st, &busy)); /* fits 1 in 2, not the share for full */
    for (int i = 0; i < D9_GOV_RECOVER_TICKS - 1; i++) CHECK(!d9_gov_step(&st, &calm));
    CHECK(d9_gov_step(&st, &calm));
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_FULL);
}

static void test_not_governed(void) {
    d9_gov_state st = {D9_GOV_LEVEL_PAUSED, 0};
    d9_gov_input in = rates(0, 40000);
    CHECK(d9_gov_step(&st, &in));
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_FULL);
    CHECK(!d9_gov_step(&st, &in));
    /* a generous budget keeps 40 k/s in full */
    st = (d9_gov_state){0, 0};
    in = rates(100 * BUDGET_1PCT, 40000);
    CHECK(!d9_gov_step(&st, &in));
}

static d9_gov_input closing(double switches, double reopen_ns) {
    d9_gov_input in = rates(BUDGET_1PCT, switches);
    in.closing_allowed = true;
    in.reopen_ns = reopen_ns;
    return in;
}

static void test_closing_between_windows(void) {
    const int l2 = D9_GOV_LEVEL_SAMPLED_FIRST, l4 = l2 + 1, l8 = l2 + 2, l16 = l2 + 3, l32 = l2 + 4;
    CHECK(d9_gov_windows_per_s(l32) == 1e9 / (32.0 * D9_GOV_WINDOW_NS)); /* 0.625 */
    CHECK(d9_gov_windows_per_s(D9_GOV_LEVEL_FULL) == 0);
    CHECK(d9_gov_windows_per_s(D9_GOV_LEVEL_PAUSED) == 0);
    /* closed between windows: the context in the windows alone (dearer: not clones), a close and
     * a reopen per window, the empty contexts in the gaps */
    d9_gov_input in = closing(20000, 1e6);
    double windows = d9_gov_windows_per_s(l32);
    CHECK(d9_gov_estimate_as(&in, l32, true) ==
          20000.0 * NS_WINDOW_CONTEXT / 32 + 20000.0 * NS_RECORDS / 32 + 500.0 / 32 * NS_STACK + 1e6 * windows +
              20000.0 * NS_CLOSED_CONTEXT * (1.0 - 1.0 / 32));
    CHECK(d9_gov_estimate_as(&in, l32, false) ==
          20000.0 * NS_CONTEXT + 20000.0 * NS_RECORDS / 32 + 500.0 / 32 * NS_STACK);
    /* per level, from the numbers: saved 20 k x (300 - 600 / N - 100 x (1 - 1/N)) ns against 1 ms
     * x 20/N a second */
    CHECK(!d9_gov_closes_between(&in, l2));  /* -1.0 ms/s saved, 10 ms/s of reopens */
    CHECK(!d9_gov_closes_between(&in, l4));  /* 1.5 against 5 */
    CHECK(d9_gov_closes_between(&in, l8));   /* 2.75 against 2.5 */
    CHECK(d9_gov_closes_between(&in, l16));
    CHECK(d9_gov_closes_between(&in, l32));
    CHECK(!d9_gov_closes_between(&in, D9_GOV_LEVEL_FULL));
    CHECK(!d9_gov_closes_between(&in, D9_GOV_LEVEL_PAUSED));
    /* the estimate is the cheaper way */
    CHECK(d9_gov_estimate(&in, l4) == d9_gov_estimate_as(&in, l4, false));
    CHECK(d9_gov_estimate(&in, l32) == d9_gov_estimate_as(&in, l32, true));
    CHECK(d9_gov_estimate(&in, l32) < d9_gov_estimate_as(&in, l32, false));
    /* cheap reopens pay from 1 in 4 (at 1 in 2 the windows' dearer context outweighs the gaps');
     * dear ones never (10 ms: 6.25 ms/s at 1 in 32 for 3.7 saved) */
    in = closing(20000, 1e5);
    CHECK(!d9_gov_closes_between(&in, l2));
    CHECK(d9_gov_closes_between(&in, l4));
    in = closing(20000, 1e7);
    for (int l = l2; l <= l32; l++) CHECK(!d9_gov_closes_between(&in, l));
    /* a slow rate saves little: 500 switches/s at 1 in 32 saves 0.09 ms/s for 0.6 ms/s of reopens */
    in = closing(500, 1e6);
    CHECK(!d9_gov_closes_between(&in, l32));
    /* not allowed (the source keeps them open), or the CPU profile keeps the context anyway */
    in = closing(20000, 1e6);
    in.closing_allowed = false;
    CHECK(!d9_gov_closes_between(&in, l32));
    CHECK(d9_gov_estimate(&in, l32) == d9_gov_estimate_as(&in, l32, false));
    in = closing(20000, 1e6);
    in.paused_keeps_context = true;
    CHECK(!d9_gov_closes_between(&in, l32));
    /* (closing saves no context then, and the reopened events make it the dearer kind) */
    CHECK(d9_gov_estimate_as(&in, l32, true) ==
          d9_gov_estimate_as(&in, l32, false) + 20000.0 * (NS_WINDOW_CONTEXT - NS_CONTEXT) + 1e6 * windows);

    /* the levels reached: 20 k/s stops at 1 in 8 (closed: 0.88 %; 1 in 4 is 1.2 % at best) */
    d9_gov_state st = {0, 0};
    in = closing(20000, 1e6);
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, l8);
    CHECK(d9_gov_estimate(&in, l8) <= BUDGET_1PCT);
    /* 40 k/s samples 1 in 16 (closed: 0.94 %, the empty contexts 0.375 % of it) instead of pausing */
    st = (d9_gov_state){0, 0};
    in = closing(40000, 1e6);
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, l16);
    /* ... unless the reopens cost too much: at 10 ms each even 1 in 32 is over (1.23 %) */
    st = (d9_gov_state){0, 0};
    in = closing(40000, 1e7);
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_PAUSED);
}

/* A stack is the kernel's part, taken at every switch the pacing lets through, plus ours
 * (stack_unwind), paid only for the share unwound: the stacks of switches inside polls. The
 * cheaper estimate keeps a finer level. */
static void test_stack_unwind_share(void) {
    d9_gov_input in = rates(BUDGET_1PCT, 4000);
    in.costs.stack = 4000;
    in.costs.stack_unwind = 4000;
    in.stacks_unwound_share = 1; /* every stack unwound: kernel + ours, as the one figure was */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 4000.0 * (NS_CONTEXT + NS_RECORDS) + 500.0 * 8000);
    in.stacks_unwound_share = 0.1;
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 4000.0 * (NS_CONTEXT + NS_RECORDS) + 500.0 * (4000 + 400));
    in.stacks_unwound_share = 0; /* none inside polls: the kernel's part alone */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 4000.0 * (NS_CONTEXT + NS_RECORDS) + 500.0 * 4000);
    in.stacks_unwound_share = 7; /* out of range: taken as all */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == 4000.0 * (NS_CONTEXT + NS_RECORDS) + 500.0 * 8000);
    /* 6 k switches/s at 1 %, no context: with every stack unwound full costs 6.6 + 4 ms/s (1 in
     * 2 then), with a tenth of them 6.6 + 2.2 (full) */
    in = rates(BUDGET_1PCT, 6000);
    in.costs.context = 0;
    in.costs.stack = 4000;
    in.costs.stack_unwind = 4000;
    in.stacks_unwound_share = 1;
    d9_gov_state st = {.level = D9_GOV_LEVEL_FULL};
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_SAMPLED_FIRST);
    in.stacks_unwound_share = 0.1;
    st = (d9_gov_state){.level = D9_GOV_LEVEL_FULL};
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_FULL);
}

/* thin_stacks_at_full: the full level keeps every record while the budget leaves
 * D9_GOV_MIN_FULL_STACKS a second after them, and paces the stacks at what is left. */
static void test_thin_stacks_at_full(void) {
    d9_gov_input in = rates(BUDGET_1PCT, 6000); /* context + records 8.4 ms/s, 500 stacks 2.5 */
    d9_gov_state st = {.level = D9_GOV_LEVEL_FULL};
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_SAMPLED_FIRST); /* as before: 10.9 ms/s at full */
    in.thin_stacks_at_full = true;
    CHECK(d9_gov_full_stacks_rate(&in) == (BUDGET_1PCT - 6000.0 * (NS_CONTEXT + NS_RECORDS)) / NS_STACK); /* 320 */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_FULL) == BUDGET_1PCT); /* the rest spent on stacks */
    st = (d9_gov_state){.level = D9_GOV_LEVEL_FULL};
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_FULL);
    /* sampled levels keep their pacing (500 / N) */
    CHECK(d9_gov_estimate(&in, D9_GOV_LEVEL_SAMPLED_FIRST) ==
          6000.0 * NS_CONTEXT + 6000.0 * NS_RECORDS / 2 + 500.0 / 2 * NS_STACK);
    /* few switches: the pacing's cap, not more */
    in = rates(BUDGET_1PCT, 1000);
    in.thin_stacks_at_full = true;
    CHECK(d9_gov_full_stacks_rate(&in) == 500);
    /* 7 000 switches/s: the records leave less than 50 stacks a second (9.8 + 0.25 ms/s) */
    in = rates(BUDGET_1PCT, 7000);
    in.thin_stacks_at_full = true;
    st = (d9_gov_state){.level = D9_GOV_LEVEL_FULL};
    d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_SAMPLED_FIRST);
    /* back to full once the records and 50 stacks fit 70 % of the budget, four times in a row:
     * 4 000 switches/s (5.6 + 0.25 ms/s), not 6 000 (8.4 + 0.25) */
    in = rates(BUDGET_1PCT, 6000);
    in.thin_stacks_at_full = true;
    for (int i = 0; i < 8; i++) d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_SAMPLED_FIRST);
    in = rates(BUDGET_1PCT, 4000);
    in.thin_stacks_at_full = true;
    for (int i = 0; i < D9_GOV_RECOVER_TICKS; i++) d9_gov_step(&st, &in);
    CHECK_EQ_U64(st.level, D9_GOV_LEVEL_FULL);
}

int main(void) {
    test_estimates();
    test_thin_stacks_at_full();
    test_stack_unwind_share();
    test_names();
    test_windows();
    test_degrade_at_once();
    test_paused_floor();
    test_recovery_with_hysteresis();
    test_not_governed();
    test_closing_between_windows();
    return d9t_summary("test_source_governor");
}
