/* The per-poll attribution (model/attribution.h) in the analysis's sweep: each worker's latest
 * poll stays open until its next one, the off-CPU intervals inside it are added as they come
 * in time order, and at its end its parts go to its spawn location and, when it is one of the
 * longest, to its entry. The cause of a blocked interval needs the symbols of its stack,
 * which a trace carries at its segments' ends: the sweep keeps the blocked time per stack
 * (as blocked_other) and the report moves it to its cause. */
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"
#include "model/offcpu_cause.h"

static long_poll_entry *entry_of(d9a_analysis *a, long slot, uint32_t gen) {
    if (slot < 0 || a->long_polls.gen[slot] != gen) return NULL;
    return d9a_topn_at(&a->long_polls, (size_t)slot);
}

void d9a_attr_poll_end(d9a_analysis *a, worker *w) {
    if (!w->at_open) return;
    w->at_open = false;
    d9m_parts p;
    d9m_attr_finish(&w->at, &p);
    bool exact = !w->at.inconsistent;
    loc_stats *L = d9a_loc(a, w->at_loc);
    if (!L) return;
    d9m_parts_add(&L->parts, &p);
    if (exact)
        for (uint32_t i = 0; i < w->nat_stk; i++) {
            uint64_t *v = d9_u64_map_upsert(&a->attr_stacks,
                                            (uint64_t)w->at_loc << 32 | w->at_stk[i].stack, 0);
            if (!v) {
                a->failed = true;
                return;
            }
            *v += w->at_stk[i].ns;
        }
    long_poll_entry *e = entry_of(a, w->at_slot, w->at_gen);
    if (!e) return;
    e->parts = p;
    e->nat_stk = exact ? w->nat_stk : 0;
    memcpy(e->at_stk, w->at_stk, e->nat_stk * sizeof e->at_stk[0]);
}

void d9a_attr_poll_begin(d9a_analysis *a, worker *w, const d9a_rec *r, long slot) {
    d9a_attr_poll_end(a, w);
    w->at_open = true;
    d9m_attr_begin(&w->at, r->ts, r->ts + r->dur);
    d9m_coverage_gaps(&a->swcov, w->id, &w->at);
    w->at_loc = r->ref;
    w->at_slot = slot;
    w->at_gen = slot >= 0 ? a->long_polls.gen[slot] : 0;
    w->nat_stk = 0;
}

/* A late poll's switch records were handed on before it: all of it is unknown. */
void d9a_attr_late_poll(d9a_analysis *a, const d9a_rec *r, long slot) {
    loc_stats *L = d9a_loc(a, r->ref);
    if (L) L->parts.ns[D9M_PART_UNKNOWN] += r->dur;
    if (slot >= 0) ((long_poll_entry *)d9a_topn_at(&a->long_polls, (size_t)slot))->parts.ns[D9M_PART_UNKNOWN] = r->dur;
}

void d9a_attr_offcpu(d9a_analysis *a, worker *w, const d9a_rec *r, uint32_t stack) {
    (void)a;
    if (!w->at_open || r->ts < w->at.start || r->ts >= w->at.end) return;
    bool preempted = r->aux != 0;
    uint64_t covered = d9m_attr_covered(&w->at, r->ts, r->ts + r->dur);
    d9m_attr_offcpu(&w->at, r->ts, r->ts + r->dur, preempted ? D9M_PART_RUNNABLE : D9M_PART_BLOCKED_OTHER);
    if (preempted || stack == D9A_NO_ID || covered == 0 || w->at.inconsistent) return;
    for (uint32_t i = 0; i < w->nat_stk; i++)
        if (w->at_stk[i].stack == stack) {
            w->at_stk[i].ns += covered;
            return;
        }
    /* more distinct stacks than kept: the rest stays blocked_other (attribution.h) */
    if (w->nat_stk < D9A_ATTR_STACKS) w->at_stk[w->nat_stk++] = (attr_stack){stack, covered};
}

#define CAUSE_FRAMES 512

static int stack_cause(d9a_analysis *a, uint32_t id) {
    if (id >= a->stacks.count) return D9M_PART_BLOCKED_OTHER;
    if (!a->stack_cause) {
        a->stack_cause = calloc(a->stacks.count, 1);
        if (!a->stack_cause) return -1;
    }
    if (a->stack_cause[id]) return a->stack_cause[id] - 1;
    uint32_t naddrs;
    const uint64_t *addrs = d9a_stacks_get(&a->stacks, id, &naddrs);
    d9a_frame frames[CAUSE_FRAMES];
    const char *symbols[CAUSE_FRAMES];
    uint32_t n = 0;
    for (uint32_t i = 0; i < naddrs && n < CAUSE_FRAMES; i++)
        n += d9a_symtab_expand(&a->symtab, addrs[i], frames + n, CAUSE_FRAMES - n);
    for (uint32_t i = 0; i < n; i++) symbols[i] = frames[i].symbol;
    d9m_part c = d9m_offcpu_cause(false, symbols, n);
    a->stack_cause[id] = (uint8_t)(c + 1);
    return c;
}

int d9a_attr_classify(d9a_analysis *a, d9m_parts *parts, const attr_stack *stk, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int c = stack_cause(a, stk[i].stack);
        if (c < 0) return -1;
        uint64_t *other = &parts->ns[D9M_PART_BLOCKED_OTHER];
        uint64_t ns = stk[i].ns < *other ? stk[i].ns : *other;
        *other -= ns;
        parts->ns[c] += ns;
    }
    return 0;
}

int d9a_attr_classify_locations(d9a_analysis *a) {
    uint64_t key, ns;
    for (size_t pos = 0; d9_u64_map_next(&a->attr_stacks, &pos, &key, &ns);) {
        loc_stats *L = d9a_loc(a, (uint32_t)(key >> 32));
        attr_stack s = {(uint32_t)key, ns};
        if (!L || d9a_attr_classify(a, &L->parts, &s, 1) != 0) return -1;
    }
    return 0;
}
