#include "analysis/span_stats.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

static void on_span(void *ctx, const d9m_span *sp) {
    d9a_span_stats *s = ctx;
    uint64_t hit = s->last_index ? s->last_index - 1 : 0;
    uint64_t *v = s->last_index && s->last_name == sp->name ? &hit : d9_u64_map_get(&s->by_name, sp->name);
    if (!v) {
        if (s->nnames == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 8;
            d9a_span_name_stats *n = realloc(s->names, cap * sizeof *n);
            if (!n) {
                s->failed = true;
                return;
            }
            s->names = n;
            s->cap = cap;
        }
        if (d9_u64_map_put(&s->by_name, sp->name, s->nnames) != 0) {
            s->failed = true;
            return;
        }
        memset(&s->names[s->nnames], 0, sizeof s->names[0]);
        s->names[s->nnames].name = sp->name;
        v = d9_u64_map_get(&s->by_name, sp->name);
        s->nnames++;
    }
    d9a_span_name_stats *n = &s->names[*v];
    s->last_name = sp->name;
    s->last_index = (size_t)*v + 1;
    if (!sp->ended) {
        n->unended++;
        return;
    }
    n->count++;
    if (sp->begin_worker != sp->end_worker) n->cross_worker++;
    d9a_hist_add(&n->elapsed, sp->end_ts - sp->begin_ts);
    n->poll_ns += sp->parts.poll_ns;
    n->queued_ns += sp->parts.queued_ns;
    n->wait_ns += sp->parts.wait_ns;
    n->unknown_ns += sp->parts.unknown_ns;
    /* the split adds up to poll_ns exactly: all of it on CPU (the usual span) or all unknown (a
     * governed recording's) leaves the other parts 0, and one sum does */
    if (sp->poll_parts.ns[D9M_PART_ON_CPU] == sp->parts.poll_ns) n->poll_parts.ns[D9M_PART_ON_CPU] += sp->parts.poll_ns;
    else if (sp->poll_parts.ns[D9M_PART_UNKNOWN] == sp->parts.poll_ns) n->poll_parts.ns[D9M_PART_UNKNOWN] += sp->parts.poll_ns;
    else d9m_parts_add(&n->poll_parts, &sp->poll_parts);
    for (size_t i = 0; i < sp->npoll_stacks; i++) {
        uint64_t *ns = d9_u64_map_upsert(&s->stacks, (uint64_t)*v << 32 | sp->poll_stacks[i].stack, 0);
        if (!ns) {
            s->failed = true;
            return;
        }
        *ns += sp->poll_stacks[i].ns;
    }
}

void d9a_spans_poll_off(d9a_analysis *a, const worker *w, const d9a_rec *r, bool preempted, uint32_t stack) {
    d9m_part part = preempted ? D9M_PART_RUNNABLE : D9M_PART_BLOCKED_OTHER;
    if (d9m_spans_task_poll_off(a->spans.model, w->at_span, w->at_span_gen, r->ts, r->ts + r->dur, part,
                                stack == D9A_NO_ID ? D9M_SPAN_NO_STACK : stack) != 0)
        a->spans.failed = true;
}

int d9a_spans_start(d9a_analysis *a) {
    if (a->spans.model) return 0;
    a->spans.model = d9m_spans_new(on_span, &a->spans);
    if (a->spans.model) d9m_spans_set_coverage(a->spans.model, &a->swcov);
    return a->spans.model ? 0 : -1;
}

static int by_total_desc(const void *x, const void *y) {
    const d9a_span_report *a = x, *b = y;
    if (a->elapsed.total != b->elapsed.total) return a->elapsed.total > b->elapsed.total ? -1 : 1;
    return strcmp(a->name, b->name);
}

int d9a_spans_report(d9a_analysis *a, d9a_report *r, uint64_t end_ns) {
    d9a_span_stats *s = &a->spans;
    if (!s->model) return 0;
    if (d9m_spans_finish(s->model, end_ns) != 0 || s->failed) return -1;
    r->span_stray_ends = d9m_spans_stray_ends(s->model);
    r->span_reopened = d9m_spans_reopened(s->model);
    if (s->nnames == 0) return 0;
    uint64_t key, ns; /* blocked time under each stack to its cause, as for the locations */
    for (size_t pos = 0; d9_u64_map_next(&s->stacks, &pos, &key, &ns);) {
        attr_stack st = {(uint32_t)key, ns};
        if (d9a_attr_classify(a, &s->names[key >> 32].poll_parts, &st, 1) != 0) return -1;
    }
    d9a_span_report *out = d9_arena_alloc(&a->report_arena, s->nnames * sizeof *out, 16);
    if (!out) return -1;
    memset(out, 0, s->nnames * sizeof *out);
    for (size_t i = 0; i < s->nnames; i++) {
        const d9a_span_name_stats *n = &s->names[i];
        d9a_span_report *x = &out[i];
        x->name = d9a_strings_get(&a->strings, n->name);
        x->count = n->count;
        x->unended = n->unended;
        x->cross_worker = n->cross_worker;
        d9a_dist_from(&x->elapsed, &n->elapsed);
        x->poll_ns = n->poll_ns;
        x->queued_ns = n->queued_ns;
        x->wait_ns = n->wait_ns;
        x->unknown_ns = n->unknown_ns;
        x->poll_parts = n->poll_parts;
    }
    if (s->nnames) qsort(out, s->nnames, sizeof *out, by_total_desc);
    r->spans = out;
    r->nspans = s->nnames;
    return 0;
}

void d9a_span_stats_free(d9a_span_stats *s) {
    d9m_spans_free(s->model);
    for (size_t i = 0; i < s->nnames; i++) d9a_hist_free(&s->names[i].elapsed);
    free(s->names);
    d9_u64_map_free(&s->by_name);
    d9_u64_map_free(&s->stacks);
    memset(s, 0, sizeof *s);
}
