/* The per-poll attribution (model/attribution.h) in the analysis's sweep: each worker's latest
 * poll stays open until its next one, the off-CPU intervals inside it are added as they come
 * in time order, and at its end its parts go to its spawn location and, when it is one of the
 * longest, to its entry; the blocked time under each switch-out stack is kept for the report
 * to classify (attribution.c). Inline: it runs for every poll and every switch. */
#ifndef D9_ANALYSIS_ATTRIBUTION_SWEEP_H
#define D9_ANALYSIS_ATTRIBUTION_SWEEP_H

#include <string.h>

#include "analysis/internal.h"
#include "analysis/span_sweep.h"

static inline long_poll_entry *d9a_attr_entry_of(d9a_analysis *a, long slot, uint32_t gen) {
    if (slot < 0 || a->long_polls.gen[slot] != gen) return NULL;
    return d9a_topn_at(&a->long_polls, (size_t)slot);
}

static inline void d9a_attr_poll_end(d9a_analysis *a, worker *w) {
    if (!w->at_open) return;
    w->at_open = false;
    d9m_attr_poll_cpu(&w->at, &a->swcov, w->at_pc.event, w->at.cpu_ns); /* the model's rule */
    d9a_poll_cpu_cover_poll(&a->pcov, &w->at, &w->at_pc);
    bool exact = !w->at.inconsistent;
    loc_stats *L = d9a_loc(a, w->at_loc);
    if (!L) return;
    d9m_attr_add_to(&w->at, &L->parts);
    if (exact && w->nat_stk && d9a_attr_commit_stacks(a, w) != 0) {
        a->failed = true;
        return;
    }
    long_poll_entry *e = d9a_attr_entry_of(a, w->at_slot, w->at_gen);
    if (!e) return;
    d9m_attr_finish(&w->at, &e->parts);
    e->nat_stk = exact ? w->nat_stk : 0;
    if (e->nat_stk && d9a_attr_keep_entry_stacks(a, (size_t)w->at_slot, w) != 0) a->failed = true;
}

static inline void d9a_attr_poll_begin(d9a_analysis *a, worker *w, const d9a_rec *r, long slot) {
    d9a_attr_poll_end(a, w);
    w->at_open = true;
    d9m_attr_begin(&w->at, r->ts, r->ts + r->dur);
    d9m_coverage_gaps(&a->swcov, w->id, &w->at);
    w->at_span = a->spans.model ? a->spans.polled : NULL; /* d9a_spans_poll's, just before */
    w->at_span_gen = 0;
    if (a->spans.model) d9a_spans_poll_feed(a, r, &w->at, &w->at_span_gen); /* the poll and its gaps */
    w->at_loc = r->ref;
    w->at_slot = slot;
    w->at_gen = slot >= 0 ? a->long_polls.gen[slot] : 0;
    w->nat_stk = 0;
    w->at_unmatched_ns = 0;
    w->at_pc = (d9a_poll_cpu_facts){0};
}

/* The open poll's exact CPU time, or that it could not be had (a PollCpuEvent). */
static inline void d9a_attr_poll_cpu(worker *w, const d9a_rec *r) {
    if (!w->at_open || w->at.start != r->ts) return;
    w->at_pc.event = r->aux == D9A_POLL_CPU_EXACT ? 1 : 2;
    if (r->aux == D9A_POLL_CPU_EXACT) d9m_attr_cpu(&w->at, r->dur);
}

/* A late poll's switch records were handed on before it: all of it is unknown. */
static inline void d9a_attr_late_poll(d9a_analysis *a, const d9a_rec *r, long slot) {
    loc_stats *L = d9a_loc(a, r->ref);
    if (L) L->parts.ns[D9M_PART_UNKNOWN] += r->dur;
    if (slot >= 0) ((long_poll_entry *)d9a_topn_at(&a->long_polls, (size_t)slot))->parts.ns[D9M_PART_UNKNOWN] = r->dur;
}

/* Blocked time under a switch-out stack, for the report to classify: every distinct stack
 * of the poll is kept, as the export keeps them, so that both split it alike. */
static inline void d9a_attr_stack_add(d9a_analysis *a, worker *w, uint32_t stack, uint64_t ns) {
    for (uint32_t i = 0; i < w->nat_stk; i++)
        if (w->at_stk[i].stack == stack) {
            w->at_stk[i].ns += ns;
            return;
        }
    if (w->nat_stk == w->at_stk_cap && d9a_attr_stacks_reserve(&w->at_stk, &w->at_stk_cap, w->nat_stk + 1) != 0) {
        a->failed = true;
        return;
    }
    w->at_stk[w->nat_stk++] = (attr_stack){stack, ns};
}

static inline void d9a_attr_offcpu(d9a_analysis *a, worker *w, const d9a_rec *r, uint32_t stack) {
    if (!w->at_open || r->ts < w->at.start || r->ts >= w->at.end) return;
    bool preempted = r->aux != 0;
    if (w->at_span) d9a_spans_poll_off(a, w, r, preempted, stack);
    uint64_t covered =
        d9m_attr_offcpu(&w->at, r->ts, r->ts + r->dur, preempted ? D9M_PART_RUNNABLE : D9M_PART_BLOCKED_OTHER);
    w->at_unmatched_ns = 0;
    if (covered > w->at_pc.longest_ns) { /* the longest interval: explained by a stack? */
        w->at_pc.longest_ns = covered;
        w->at_pc.longest_ts = r->ts;
        w->at_pc.longest_explained = preempted || stack != D9A_NO_ID;
    }
    if (preempted || covered == 0 || w->at.inconsistent) return;
    if (stack == D9A_NO_ID) { /* its sample may come just after it (d9a_attr_sample) */
        w->at_unmatched_ts = r->ts;
        w->at_unmatched_ns = covered;
        return;
    }
    d9a_attr_stack_add(a, w, stack, covered);
}

/* A context-switch sample (CpuSampleEvent source 1) of w: the stack of the interval that
 * began just before it, when the model's rule gives it that one (model/switch_stack_match.h:
 * the sample and the switch record come from two perf events, either may carry the earlier
 * timestamp); else it waits for the next switch-out (sweep.c's on_offcpu). */
static inline void d9a_attr_sample(d9a_analysis *a, worker *w, const d9a_rec *r) {
    if (!d9m_switch_match_sample(&w->sw_match, r->ts, r->ref)) return;
    /* the blocked time that interval counted in the open poll, when it counted some */
    if (!w->at_unmatched_ns || !w->at_open || w->at_unmatched_ts != w->sw_match.out) return;
    d9a_attr_stack_add(a, w, r->ref, w->at_unmatched_ns);
    if (w->at_pc.longest_ts == w->at_unmatched_ts) w->at_pc.longest_explained = true;
    w->at_unmatched_ns = 0;
    if (w->at_span) d9m_spans_task_poll_off_stack(a->spans.model, w->at_span, w->at_span_gen, r->ref);
}

#endif
