/* The per-poll attribution (model/attribution.h) in the analysis, the report's side: the
 * cause of a blocked interval needs the symbols of its stack, which a trace carries at its
 * segments' ends, so the sweep (attribution_sweep.h) keeps the blocked time per stack (as
 * blocked_other) and the report moves it to its cause. */
#include <stdlib.h>
#include <string.h>

#include "analysis/attribution_sweep.h"
#include "model/offcpu_cause.h"

/* The sweep's side is inline (attribution_sweep.h): it runs for every poll. Out of line: a
 * poll's blocked stacks committed to its location. */
int d9a_attr_commit_stacks(d9a_analysis *a, const worker *w) {
    for (uint32_t i = 0; i < w->nat_stk; i++) {
        uint64_t *v = d9_u64_map_upsert(&a->attr_stacks, (uint64_t)w->at_loc << 32 | w->at_stk[i].stack, 0);
        if (!v) return -1;
        *v += w->at_stk[i].ns;
    }
    return 0;
}

int d9a_attr_stacks_reserve(attr_stack **v, uint32_t *cap, uint32_t need) {
    if (need <= *cap) return 0;
    uint32_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    attr_stack *p = realloc(*v, (size_t)c * sizeof *p);
    if (!p) return -1;
    *v = p;
    *cap = c;
    return 0;
}

int d9a_attr_keep_entry_stacks(d9a_analysis *a, size_t slot, const worker *w) {
    if (!a->lp_stk) { /* one list per slot of the longest polls, made at the first use */
        a->lp_stk = calloc(a->long_polls.cap, sizeof *a->lp_stk);
        a->lp_stk_cap = calloc(a->long_polls.cap, sizeof *a->lp_stk_cap);
        if (!a->lp_stk || !a->lp_stk_cap) return -1;
    }
    if (d9a_attr_stacks_reserve(&a->lp_stk[slot], &a->lp_stk_cap[slot], w->nat_stk) != 0) return -1;
    memcpy(a->lp_stk[slot], w->at_stk, w->nat_stk * sizeof *w->at_stk);
    return 0;
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
