/* Decisions of the CPU cost governor: pure arithmetic on measured rates (cost_governor.h). */
#include "sources/cost_governor.h"

/* d9_bench_governor --only parts --pairs 5, 2026-12-02 16:24 UTC, load average below 1: context
 * 1 111 ns per switch, records 1 411, a stack 8 250, a CPU sample 21 620, a schedstat read
 * 1 270. (The table before, 300 / 1 100 / 5 000 / 5 000 / 1 000, came from a loaded host of an
 * earlier VM, and let the governor spend 2.1 % at 20 k switches/s and 3.2 % at 40 k against its
 * 1 %.) */
/* The stack split (d9_bench_governor --only parts --pairs 3, 2026-12-06, load average 10-11,
 * 20 k switches/s): 9 917 ns a stack, the kernel's part 9 039 (91 %), ours 878 per stack,
 * 1 855 per stack unwound (47 % were). The kernel's part here is the quiet host's 8 250 less
 * ours; ours the loaded host's figure per stack unwound (an upper bound: it includes writing
 * the kernel frames of the samples left without user frames). */
const d9_gov_costs d9_gov_costs_measured = {
    .context = 1100, .records = 1400, .stack = 7400, .stack_unwind = 1800, .cpu_sample = 20000, .schedstat = 1300,
    .closed_context = 250, .window_context = 2300};

uint32_t d9_gov_one_in(int level) {
    if (level <= D9_GOV_LEVEL_FULL) return 1;
    if (level >= D9_GOV_LEVEL_PAUSED) return 0;
    return 1u << (level - D9_GOV_LEVEL_SAMPLED_FIRST + 1);
}

const char *d9_gov_mode_name(int level) {
    if (level <= D9_GOV_LEVEL_FULL) return "full";
    if (level >= D9_GOV_LEVEL_PAUSED) return "paused";
    return "sampled";
}

bool d9_gov_window_on(int level, uint64_t now_ns) {
    uint32_t n = d9_gov_one_in(level);
    if (n == 0) return false;
    return (now_ns / D9_GOV_WINDOW_NS) % n == 0;
}

static double positive(double x) { return x > 0 ? x : 0; }

double d9_gov_fixed_ns(const d9_gov_input *in) {
    return positive(in->cpu_samples_per_s) * in->costs.cpu_sample + positive(in->schedstat_per_s) * in->costs.schedstat;
}

double d9_gov_stacks_rate(double stacks_per_sec, int level) {
    uint32_t n = d9_gov_one_in(level);
    return n ? stacks_per_sec / n : 0;
}

double d9_gov_windows_per_s(int level) {
    uint32_t n = d9_gov_one_in(level);
    return n > 1 ? 1e9 / ((double)n * (double)D9_GOV_WINDOW_NS) : 0;
}

static double stack_ns(const d9_gov_input *in) {
    double share = in->stacks_unwound_share > 1 ? 1 : positive(in->stacks_unwound_share);
    return in->costs.stack + share * in->costs.stack_unwind;
}

double d9_gov_full_stacks_rate(const d9_gov_input *in) {
    double cap = positive(in->stacks_cap_per_s);
    if (!in->thin_stacks_at_full || in->budget_ns_per_s <= 0) return cap;
    double sw = positive(in->switches_per_s);
    double left = in->budget_ns_per_s - d9_gov_fixed_ns(in) - sw * (in->costs.context + in->costs.records);
    double fits = stack_ns(in) > 0 ? positive(left) / stack_ns(in) : cap;
    return fits < cap ? fits : cap;
}

double d9_gov_estimate_as(const d9_gov_input *in, int level, bool closed_between) {
    double sw = positive(in->switches_per_s);
    uint32_t n = d9_gov_one_in(level);
    double ns = d9_gov_fixed_ns(in);
    if (n == 0) return in->paused_keeps_context ? ns + sw * in->costs.context : ns; /* closed */
    bool gaps = closed_between && n > 1;
    /* the context while the events are open: all the time, or the windows alone (events opened
     * again at each window: contexts that are not clones) */
    ns += sw * (gaps ? in->costs.window_context : in->costs.context) / (gaps && !in->paused_keeps_context ? n : 1);
    /* records in one window of N; a stack per switch of a worker in those windows, up to the
     * pacing's rate (workers' switches are counted as all of the process's: an upper bound) */
    double cap = n == 1 ? d9_gov_full_stacks_rate(in) : positive(in->stacks_cap_per_s);
    double stacks = (sw < cap ? sw : cap) / n; /* the pacing's rate (d9_gov_stacks_rate), or fewer */
    ns += sw * in->costs.records / n + stacks * stack_ns(in);
    if (gaps) {
        ns += positive(in->reopen_ns) * d9_gov_windows_per_s(level); /* a close and a reopen per window */
        /* the empty contexts between windows (with the CPU profile's events the context stays
         * whole, counted above) */
        if (!in->paused_keeps_context) ns += sw * in->costs.closed_context * (1.0 - 1.0 / n);
    }
    return ns;
}

bool d9_gov_closes_between(const d9_gov_input *in, int level) {
    if (!in->closing_allowed || d9_gov_one_in(level) < 2) return false;
    return d9_gov_estimate_as(in, level, true) < d9_gov_estimate_as(in, level, false);
}

double d9_gov_estimate(const d9_gov_input *in, int level) {
    return d9_gov_estimate_as(in, level, d9_gov_closes_between(in, level));
}

/* Does `level` fit `share` of the budget? The full level with thinned stacks fits while the
 * budget leaves it D9_GOV_MIN_FULL_STACKS a second (or a stack per switch, if fewer) after the
 * records; its estimate is then the budget or less, spent on stacks. */
static bool fits(const d9_gov_input *in, int level, double share) {
    if (level == D9_GOV_LEVEL_FULL && in->thin_stacks_at_full) {
        double sw = positive(in->switches_per_s), cap = positive(in->stacks_cap_per_s);
        double need = D9_GOV_MIN_FULL_STACKS < cap ? D9_GOV_MIN_FULL_STACKS : cap;
        if (sw < need) need = sw;
        double floor = d9_gov_fixed_ns(in) + sw * (in->costs.context + in->costs.records) + need * stack_ns(in);
        return floor <= in->budget_ns_per_s * share;
    }
    return d9_gov_estimate(in, level) <= in->budget_ns_per_s * share;
}

bool d9_gov_step(d9_gov_state *st, const d9_gov_input *in) {
    int old = st->level;
    if (in->budget_ns_per_s <= 0) { /* not governed */
        st->level = D9_GOV_LEVEL_FULL;
        st->calm_ticks = 0;
        return st->level != old;
    }
    if (!fits(in, st->level, 1.0)) {
        int l = st->level + 1;
        while (l < D9_GOV_LEVEL_PAUSED && !fits(in, l, 1.0)) l++;
        st->level = l < D9_GOV_LEVEL_PAUSED ? l : D9_GOV_LEVEL_PAUSED;
        st->calm_ticks = 0;
        return st->level != old;
    }
    if (st->level > D9_GOV_LEVEL_FULL && fits(in, st->level - 1, D9_GOV_RECOVER_SHARE)) {
        if (++st->calm_ticks >= D9_GOV_RECOVER_TICKS) {
            st->level--;
            st->calm_ticks = 0;
        }
    } else {
        st->calm_ticks = 0;
    }
    return st->level != old;
}
