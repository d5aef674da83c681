/* Where a poll's time went, exactly: the one definition every reader of the trace model uses
 * (analyze, export, fold; the viewer follows it in viewer/src/attribution.js), written once.
 *
 * A poll runs on one thread from its PollStartEvent to its PollEndEvent; its elapsed time
 * (end - start, integer ns) splits into parts that add up to it exactly:
 *
 *   on_cpu         the thread ran: the elapsed time no off-CPU interval and no gap covers
 *   lock           blocked off-CPU, the stack taken at the switch-out waits for a lock
 *   io             blocked in an I/O or other system call (read, recv, futex of a condvar, ...)
 *   sleep          blocked in nanosleep / clock_nanosleep / usleep
 *   fault          blocked in a page fault
 *   blocked_other  blocked, and the stack names none of those causes, or no stack was taken
 *                  (the governor's no_stacks mode, the stack pacing, no switch-out sample)
 *   runnable       switched out while still runnable (preempted) until it ran again: the
 *                  run-queue wait of CPU contention
 *   unknown        the part the trace does not cover, never guessed
 *   off_cpu_uncaptured  off-CPU for certain, in a part switch records do not cover: the
 *                  poll's exact CPU time (PollCpuEvent, core/poll_cpu.h) says how much of
 *                  the uncovered part the thread was off-CPU, not why
 *
 * Off-CPU intervals are the thread's SchedSwitchEvent switch-out .. switch-in pairs (exact);
 * a blocked interval runs until the thread ran again, so the run-queue wait after its wake-up
 * is counted in its cause (the kernel records no wake-up time). An interval's cause is read
 * from its preempted flag and the context-switch stack (CpuSampleEvent source 1) taken at its
 * switch-out (model/offcpu_cause.h).
 *
 * Coverage: switch records say something only where they were recorded. A part of a poll is
 * a gap (unknown) when
 *   - the trace has no switch records at all: its metadata states source.off_cpu inactive, or
 *     states nothing and no SchedSwitchEvent was read;
 *   - the cost governor recorded the off_cpu source partially then (CoverageEvent mode
 *     sampled or paused: which windows were recorded is not known); no_stacks is covered
 *     (the intervals are there, their causes are blocked_other);
 *   - a DroppedEventsEvent concerning the poll's worker (its worker id, or the whole process:
 *     worker 255 and tid 0) falls inside the poll: events are missing before it, so the poll
 *     from its start to the drop is a gap.
 * An off-CPU interval counts only outside the gaps; whatever of it lies in a gap is unknown.
 *
 * The poll's exact CPU time (a PollCpuEvent: the recorder writes one for a poll over
 * DIAL9_POLL_CPU_MIN_US with a switch inside) resolves its gaps: the poll's off-CPU total is
 * elapsed - CPU time; what the covered intervals do not account for of it lies in the gaps,
 * and is off_cpu_uncaptured (at most the gaps' length); the rest of the gaps is on_cpu, and
 * nothing is unknown. A poll without gaps keeps its intervals' split (the task clock leaves
 * out the kernel's few us of switching, which its intervals count).
 *
 * Which CPU time a poll has, one rule for every reader (d9m_attr_poll_cpu): the recorder
 * writes a PollCpuEvent for every poll over its threshold with a switch inside (metadata
 * poll_cpu "on: polls over N us ...": d9m_coverage_metadata). So
 *   - an exact PollCpuEvent: its CPU time;
 *   - no PollCpuEvent at all, the recording states poll_cpu on, the poll is over N us and has
 *     gaps: its thread was not switched out inside it, its CPU time is its elapsed time (its
 *     gaps are on_cpu);
 *   - a PollCpuEvent that says "not exact" (no task-clock page), or no event where the rule
 *     above does not hold: no CPU time, its gaps stay unknown. */
#ifndef D9_MODEL_ATTRIBUTION_H
#define D9_MODEL_ATTRIBUTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A context-switch sample and the switch-out it was taken at come from two perf events: they
 * are one when their timestamps are this close (either may come first). The kernel writes the
 * sample first, its user stack copied before the switch record is stamped: 2-63 us apart on a
 * loaded 2-CPU guest, so 50 us missed one planted wait in three. Wider is safe: a sample is
 * taken by a running thread, so it can only belong to the thread's next switch-out, and a
 * reader matches it to an unmatched interval that had not ended when it was taken. */
#define D9M_SWITCH_STACK_MATCH_NS 1000000

typedef enum d9m_part {
    D9M_PART_ON_CPU,
    D9M_PART_LOCK,
    D9M_PART_IO,
    D9M_PART_SLEEP,
    D9M_PART_FAULT,
    D9M_PART_BLOCKED_OTHER,
    D9M_PART_RUNNABLE,
    D9M_PART_UNKNOWN,
    D9M_PART_OFF_CPU_UNCAPTURED, /* after UNKNOWN: readers with columns of the first 8 keep them */
    D9M_PARTS
} d9m_part;

/* "on_cpu", "lock", "io", "sleep", "fault", "blocked_other", "runnable", "unknown",
 * "off_cpu_uncaptured": the
 * names of the JSON fields (with "_ns") and of the exports' arguments. */
extern const char *const d9m_part_names[D9M_PARTS];

/* The parts of one poll or a sum of polls, in ns. */
typedef struct d9m_parts {
    uint64_t ns[D9M_PARTS];
} d9m_parts;

static inline void d9m_parts_add(d9m_parts *sum, const d9m_parts *p) {
    for (int i = 0; i < D9M_PARTS; i++) sum->ns[i] += p->ns[i];
}
static inline uint64_t d9m_parts_total(const d9m_parts *p) {
    uint64_t t = 0;
    for (int i = 0; i < D9M_PARTS; i++) t += p->ns[i];
    return t;
}

/* ---- one poll ---- */

#define D9M_ATTR_GAPS 8 /* disjoint gaps kept per poll; more are merged into their hull */

typedef struct d9m_attr_poll {
    uint64_t start, end;
    uint32_t ngaps;
    bool inconsistent; /* off-CPU intervals overlapping each other: the poll is all unknown */
    struct {
        uint64_t from, to;
    } gaps[D9M_ATTR_GAPS]; /* sorted, disjoint, within [start, end) */
    d9m_parts off;              /* the covered off-CPU time by cause, so far */
    uint64_t off_total;         /* their sum */
    uint64_t last_off_end;      /* the end of the latest off-CPU interval added */
    bool cpu_known;             /* cpu_ns is the poll's exact CPU time (d9m_attr_cpu) */
    uint64_t cpu_ns;
} d9m_attr_poll;

/* What a poll's PollCpuEvent said (the reader pairs it with its poll: its worker's latest
 * closed poll, once). */
typedef enum d9m_poll_cpu {
    D9M_POLL_CPU_NONE = 0,  /* no PollCpuEvent for the poll */
    D9M_POLL_CPU_EXACT,     /* its exact CPU time */
    D9M_POLL_CPU_NOT_EXACT, /* the recorder could not measure it; or the reader cut the poll
                               short (the export's --to): what it said is not the piece's */
} d9m_poll_cpu;

/* Inline, as the rest of a poll's arithmetic: the analysis runs it for every poll. */
static inline void d9m_attr_begin(d9m_attr_poll *p, uint64_t start, uint64_t end) {
    p->start = start;
    p->end = end > start ? end : start;
    p->ngaps = 0;
    p->inconsistent = false;
    p->last_off_end = 0;
    p->off_total = 0;
    p->off = (d9m_parts){{0}};
    p->cpu_known = false;
    p->cpu_ns = 0;
}
/* The poll's exact CPU time (its PollCpuEvent; readers call d9m_attr_poll_cpu). */
static inline void d9m_attr_cpu(d9m_attr_poll *p, uint64_t cpu_ns) {
    p->cpu_known = true;
    p->cpu_ns = cpu_ns;
}
/* With the CPU time known: the part of the gaps that was off-CPU (attribution rule above). */
static inline uint64_t d9m_attr_uncaptured(const d9m_attr_poll *p, uint64_t elapsed, uint64_t gaps) {
    uint64_t cpu = p->cpu_ns < elapsed ? p->cpu_ns : elapsed;
    uint64_t off = elapsed - cpu;
    uint64_t rest = off > p->off_total ? off - p->off_total : 0;
    return rest < gaps ? rest : gaps;
}
/* [from, to) of the poll is not covered. All gaps come before the first off-CPU interval. */
void d9m_attr_gap(d9m_attr_poll *p, uint64_t from, uint64_t to);
/* The covered part of [from, to) inside the poll (what d9m_attr_offcpu counts). */
uint64_t d9m_attr_covered_gaps(const d9m_attr_poll *p, uint64_t from, uint64_t to);
static inline uint64_t d9m_attr_covered(const d9m_attr_poll *p, uint64_t from, uint64_t to) {
    if (p->ngaps) return d9m_attr_covered_gaps(p, from, to);
    if (from < p->start) from = p->start;
    if (to > p->end) to = p->end;
    return to > from ? to - from : 0;
}
/* The thread was off-CPU over [from, to) for `cause` (not ON_CPU or UNKNOWN: those count as
 * BLOCKED_OTHER); intervals of the thread come in time order. Clipped to the poll; its part
 * inside gaps stays unknown. Returns the ns it counted. */
static inline uint64_t d9m_attr_offcpu(d9m_attr_poll *p, uint64_t from, uint64_t to, d9m_part cause) {
    if (cause == D9M_PART_ON_CPU || cause >= D9M_PART_UNKNOWN) cause = D9M_PART_BLOCKED_OTHER;
    if (to <= from) return 0;
    if (from < p->last_off_end) {
        /* one thread is off-CPU once at a time: overlapping intervals are a broken trace */
        p->inconsistent = true;
        return 0;
    }
    p->last_off_end = to;
    uint64_t d = d9m_attr_covered(p, from, to);
    p->off.ns[cause] += d;
    p->off_total += d;
    return d;
}
static inline uint64_t d9m_attr_gap_ns(const d9m_attr_poll *p) {
    uint64_t gaps = 0;
    for (uint32_t i = 0; i < p->ngaps; i++) gaps += p->gaps[i].to - p->gaps[i].from;
    return gaps;
}
/* The poll's parts: on_cpu and unknown complete them to end - start; all unknown when the
 * intervals were inconsistent. */
static inline void d9m_attr_finish(const d9m_attr_poll *p, d9m_parts *out) {
    uint64_t elapsed = p->end - p->start;
    if (p->inconsistent) {
        *out = (d9m_parts){{0}};
        out->ns[D9M_PART_UNKNOWN] = elapsed;
        return;
    }
    uint64_t gaps = d9m_attr_gap_ns(p);
    *out = p->off;
    if (p->cpu_known && gaps) {
        uint64_t uncaptured = d9m_attr_uncaptured(p, elapsed, gaps);
        out->ns[D9M_PART_OFF_CPU_UNCAPTURED] = uncaptured;
        out->ns[D9M_PART_UNKNOWN] = 0;
        out->ns[D9M_PART_ON_CPU] = elapsed - p->off_total - uncaptured;
        return;
    }
    out->ns[D9M_PART_UNKNOWN] = gaps;
    /* covered intervals lie outside the gaps, inside the poll */
    out->ns[D9M_PART_ON_CPU] = elapsed - gaps - p->off_total;
}
/* Add the poll's parts to *sum (what d9m_attr_finish gives, without the copy: once per poll). */
static inline void d9m_attr_add_to(const d9m_attr_poll *p, d9m_parts *sum) {
    uint64_t elapsed = p->end - p->start;
    if (__builtin_expect(p->inconsistent, 0)) {
        sum->ns[D9M_PART_UNKNOWN] += elapsed;
        return;
    }
    uint64_t gaps = p->ngaps ? d9m_attr_gap_ns(p) : 0;
    if (p->off_total)
        for (int i = D9M_PART_LOCK; i <= D9M_PART_RUNNABLE; i++) sum->ns[i] += p->off.ns[i];
    if (__builtin_expect(p->cpu_known && gaps, 0)) {
        uint64_t uncaptured = d9m_attr_uncaptured(p, elapsed, gaps);
        sum->ns[D9M_PART_OFF_CPU_UNCAPTURED] += uncaptured;
        sum->ns[D9M_PART_ON_CPU] += elapsed - p->off_total - uncaptured;
        return;
    }
    sum->ns[D9M_PART_UNKNOWN] += gaps;
    sum->ns[D9M_PART_ON_CPU] += elapsed - gaps - p->off_total;
}

/* ---- the trace's coverage of switch records ---- */

typedef struct d9m_cov_change {
    uint64_t ts;
    bool covered;
} d9m_cov_change;

typedef struct d9m_cov_drop {
    uint64_t ts;
    uint64_t worker; /* D9M_COV_ALL_WORKERS: the whole process */
} d9m_cov_drop;

#define D9M_COV_ALL_WORKERS UINT64_MAX

typedef enum d9m_switch_source {
    D9M_SWITCH_UNSTATED = 0, /* no source.off_cpu in the metadata */
    D9M_SWITCH_ACTIVE,
    D9M_SWITCH_INACTIVE,
} d9m_switch_source;

typedef struct d9m_coverage {
    d9m_switch_source stated;
    bool poll_cpu_on;           /* metadata poll_cpu "on: polls over N us ..." */
    uint64_t poll_cpu_min_ns;   /* its N, in ns (0 when not on) */
    bool switch_seen;           /* a SchedSwitchEvent was read */
    d9m_cov_change *changes;    /* CoverageEvent of source off_cpu, sorted by ts */
    size_t nchanges, changes_cap;
    d9m_cov_drop *drops;        /* sorted by ts */
    size_t ndrops, drops_cap;
    bool failed;                /* out of memory: everything is a gap from then on */
} d9m_coverage;

/* A metadata entry: source.off_cpu states the switch source ("active..." / anything else),
 * poll_cpu whether every long poll with a switch has its PollCpuEvent (d9m_poll_cpu_metadata). */
void d9m_coverage_metadata(d9m_coverage *c, const char *key, size_t key_len, const char *val,
                           size_t val_len);
/* The entry poll_cpu: true when key is poll_cpu, then *on is whether it says "on: polls over
 * N us" (N > 0) and *min_ns is N us in ns (0 when not on). */
bool d9m_poll_cpu_metadata(const char *key, size_t key_len, const char *val, size_t val_len, bool *on,
                           uint64_t *min_ns);
/* A CoverageEvent (any source: only off_cpu's are kept). */
void d9m_coverage_change(d9m_coverage *c, uint64_t ts, const char *source, size_t source_len,
                         const char *mode, size_t mode_len);
/* A DroppedEventsEvent: worker_id (D9_WORKER_NONE = 255 when absent) and tid (0 absent). */
void d9m_coverage_drop(d9m_coverage *c, uint64_t ts, uint64_t worker, uint64_t tid);
/* Where a caller's previous poll found its coverage changes and drops: a caller that hands
 * its polls in order of start (per worker, or all) passes one, and each poll steps on from
 * the previous one's instead of two binary searches (a recording whose governor paused the
 * switch records has thousands of changes: ~280 instructions a poll). Any hint is correct: one
 * past the poll's start is searched for. Zero-initialised before the first poll.
 * With it, the times between the changes and drops on either side of it: a later poll that
 * lies within them takes the governor's mode there and nothing else, with no step and no
 * loop (most polls: the changes and drops are few). For a coverage complete before the first
 * poll (nothing added while the cursor is in use). */
typedef struct d9m_cov_cursor {
    size_t change, drop;
    uint64_t quiet_from, quiet_until; /* a poll with from <= start and end < until: quiet */
    bool quiet_covered;               /* the governor's mode there */
} d9m_cov_cursor;

/* Add the gaps of a poll of `worker` over [p->start, p->end) to p. cur: NULL, or the caller's
 * cursor (above). */
void d9m_coverage_gaps_slow(const d9m_coverage *c, uint64_t worker, d9m_attr_poll *p, d9m_cov_cursor *cur);
/* The whole poll as its one gap (p has none yet). */
static inline void d9m_coverage_whole_gap(d9m_attr_poll *p) {
    p->gaps[0].from = p->start;
    p->gaps[0].to = p->end;
    p->ngaps = p->end > p->start;
}
static inline void d9m_coverage_gaps_from(const d9m_coverage *c, uint64_t worker, d9m_attr_poll *p,
                                          d9m_cov_cursor *cur) {
    /* the usual cases: no governor record and no drop, and switch records or none at all */
    if (c->nchanges == 0 && c->ndrops == 0 && !c->failed) {
        if (c->stated == D9M_SWITCH_ACTIVE || (c->stated == D9M_SWITCH_UNSTATED && c->switch_seen)) return;
        d9m_coverage_whole_gap(p);
        return;
    }
    /* within the quiet times of the caller's previous step (set only with switch records) */
    if (cur && p->start >= cur->quiet_from && p->end < cur->quiet_until) {
        if (!cur->quiet_covered) d9m_coverage_whole_gap(p);
        return;
    }
    d9m_coverage_gaps_slow(c, worker, p, cur);
}
static inline void d9m_coverage_gaps(const d9m_coverage *c, uint64_t worker, d9m_attr_poll *p) {
    d9m_coverage_gaps_from(c, worker, p, NULL);
}
void d9m_coverage_free(d9m_coverage *c);

/* ---- the poll's CPU time: one rule (above) ---- */

/* A poll without a PollCpuEvent, `elapsed` ns long, with gaps or not: did its thread run all of
 * it (the recording states poll_cpu on and the poll is over its threshold)? */
static inline bool d9m_poll_cpu_presumed(const d9m_coverage *c, d9m_poll_cpu event, uint64_t elapsed, bool gaps) {
    return event == D9M_POLL_CPU_NONE && c->poll_cpu_on && gaps && elapsed > c->poll_cpu_min_ns;
}
/* Once the poll's gaps are in (d9m_coverage_gaps): its CPU time by the rule, from its
 * PollCpuEvent (`event`, and `cpu_ns` when exact) or the lack of one. */
static inline void d9m_attr_poll_cpu(d9m_attr_poll *p, const d9m_coverage *c, d9m_poll_cpu event, uint64_t cpu_ns) {
    if (event == D9M_POLL_CPU_EXACT) d9m_attr_cpu(p, cpu_ns);
    else if (d9m_poll_cpu_presumed(c, event, p->end - p->start, p->ngaps != 0)) d9m_attr_cpu(p, p->end - p->start);
}

#endif
