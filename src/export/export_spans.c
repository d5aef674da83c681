/* Spans in the export model: the span events read, paired and split by the span model
 * (model/spans.h) over the model's polls and wakes once those are built, then given lanes so
 * that the spans of one name that overlap in time are drawn side by side. */
#include <stdlib.h>
#include <string.h>

#include "export/export_model.h"
#include "model/pairing.h"

int d9_xspans_add(d9_xmodel *m, const d9_event *ev, uint32_t name) {
    const d9_dec_binding *in = &ev->schema->bind;
    if (m->span_mark_count == m->span_mark_cap) {
        size_t cap = m->span_mark_cap ? 2 * m->span_mark_cap : 64;
        d9_xspan_mark *p = realloc(m->span_marks, cap * sizeof *p);
        if (!p) return -1;
        m->span_marks = p;
        m->span_mark_cap = cap;
    }
    m->span_marks[m->span_mark_count++] = (d9_xspan_mark){
        .ts = ev->ts_ns,
        .id = d9m_uint_or(ev, in->field[D9_KF_SPAN_ID], 0),
        .task = d9m_uint_or(ev, in->field[D9_KF_TASK_ID], 0),
        .name = name,
        .begin = in->role == D9_SCH_SPAN_ENTER,
    };
    return 0;
}

typedef struct build_ctx {
    d9_xmodel *m;
    size_t cap;
    bool failed;
} build_ctx;

static void on_span(void *ctx, const d9m_span *s) {
    build_ctx *c = ctx;
    d9_xmodel *m = c->m;
    if (m->span_count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        d9_xspan *p = realloc(m->spans, cap * sizeof *p);
        if (!p) {
            c->failed = true;
            return;
        }
        m->spans = p;
        c->cap = cap;
    }
    m->spans[m->span_count++] = (d9_xspan){.start = s->begin_ts, .end = s->end_ts, .id = s->id,
                                           .name = s->name, .ended = s->ended,
                                           .begin_task = s->begin_task, .end_task = s->end_task,
                                           .parts = s->parts, .poll_parts = s->poll_parts};
}

static const void *sort_base; /* qsort has no context argument */

/* marks by time, in reading order at equal times */
static int cmp_mark(const void *a, const void *b) {
    const d9_xspan_mark *ms = sort_base;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (ms[x].ts != ms[y].ts) return ms[x].ts < ms[y].ts ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int cmp_poll(const void *a, const void *b) {
    const d9_xpoll *ps = sort_base;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (ps[x].start != ps[y].start) return ps[x].start < ps[y].start ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int cmp_span(const void *a, const void *b) {
    const d9_xspan *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static uint32_t *order(const void *base, size_t n, int (*cmp)(const void *, const void *)) {
    uint32_t *o = malloc((n + 1) * sizeof *o);
    if (!o) return NULL;
    for (size_t i = 0; i < n; i++) o[i] = (uint32_t)i;
    sort_base = base;
    qsort(o, n, sizeof *o, cmp);
    return o;
}

/* Lanes: per name, the first lane free at the span's start (its last span ended by then). */
static int assign_lanes(d9_xmodel *m) {
    m->span_names = malloc((m->span_count + 1) * sizeof *m->span_names);
    m->span_name_lanes = calloc(m->span_count + 1, sizeof *m->span_name_lanes);
    uint64_t *lane_end = malloc((m->span_count + 1) * sizeof *lane_end); /* per name, its lanes */
    size_t *lane_first = malloc((m->span_count + 1) * sizeof *lane_first);
    int rc = -1;
    if (!m->span_names || !m->span_name_lanes || !lane_end || !lane_first) goto out;
    d9_u64_map by_name = {0};
    size_t used = 0; /* lane_end entries used; a name's lanes are contiguous as they are added */
    /* lanes of a name must be contiguous: count the spans per name first */
    uint32_t *count = calloc(m->span_count + 1, sizeof *count);
    if (!count) goto out;
    for (size_t i = 0; i < m->span_count; i++) {
        uint64_t *v = d9_u64_map_get(&by_name, m->spans[i].name);
        if (!v) {
            if (d9_u64_map_put(&by_name, m->spans[i].name, m->span_name_count) != 0) {
                free(count);
                d9_u64_map_free(&by_name);
                goto out;
            }
            m->span_names[m->span_name_count++] = m->spans[i].name;
            v = d9_u64_map_get(&by_name, m->spans[i].name);
        }
        count[*v]++;
    }
    for (size_t k = 0; k < m->span_name_count; k++) { /* room for as many lanes as spans */
        lane_first[k] = used;
        used += count[k];
    }
    for (size_t i = 0; i < m->span_count; i++) {
        d9_xspan *s = &m->spans[i];
        uint64_t k = *d9_u64_map_get(&by_name, s->name);
        uint64_t *ends = lane_end + lane_first[k];
        uint32_t lane = 0;
        while (lane < m->span_name_lanes[k] && ends[lane] > s->start) lane++;
        if (lane == m->span_name_lanes[k]) m->span_name_lanes[k]++;
        ends[lane] = s->end;
        s->lane = lane;
        s->name_index = (uint32_t)k;
    }
    free(count);
    d9_u64_map_free(&by_name);
    rc = 0;
out:
    free(lane_end);
    free(lane_first);
    return rc;
}

/* The poll's attribution (export_attribution.c) to the span model, causes already read. */
static int feed_attribution(const d9_xmodel *m, d9m_spans *sm, uint32_t poll) {
    if (!m->poll_piece_first) return 0;
    const d9_xpoll *q = &m->polls[poll];
    for (uint32_t k = m->poll_piece_first[poll]; k < m->poll_piece_first[poll + 1]; k++) {
        const d9_xattr_piece *x = &m->poll_pieces[k];
        int r = x->part == D9M_PART_UNKNOWN
                    ? d9m_spans_poll_gap(sm, q->task, x->from, x->to)
                    : d9m_spans_poll_off(sm, q->task, x->from, x->to, (d9m_part)x->part, D9M_SPAN_NO_STACK);
        if (r != 0) return r;
    }
    return 0;
}

int d9_xspans_build(d9_xmodel *m, const d9m_coverage *cov) {
    if (m->span_mark_count == 0) return 0;
    build_ctx c = {.m = m};
    d9m_spans *sm = d9m_spans_new(on_span, &c);
    if (sm) d9m_spans_set_coverage(sm, cov);
    uint32_t *mk = order(m->span_marks, m->span_mark_count, cmp_mark);
    uint32_t *pl = order(m->polls, m->poll_count, cmp_poll);
    int rc = -1;
    if (!sm || !mk || !pl) goto out;
    /* in time order: a wake before a poll before a span mark of the same time */
    size_t iw = 0, ip = 0, im = 0;
    for (;;) {
        uint64_t tw = iw < m->wake_count ? m->wakes[iw].ts : UINT64_MAX;
        uint64_t tp = ip < m->poll_count ? m->polls[pl[ip]].start : UINT64_MAX;
        uint64_t tm = im < m->span_mark_count ? m->span_marks[mk[im]].ts : UINT64_MAX;
        if (iw >= m->wake_count && ip >= m->poll_count && im >= m->span_mark_count) break;
        int r = 0;
        if (iw < m->wake_count && tw <= tp && tw <= tm) {
            r = d9m_spans_wake(sm, m->wakes[iw].woken_task, tw);
            iw++;
        } else if (ip < m->poll_count && tp <= tm) {
            uint32_t at = pl[ip++];
            const d9_xpoll *q = &m->polls[at];
            r = d9m_spans_poll(sm, q->task, q->start, q->end);
            if (r == 0) r = feed_attribution(m, sm, at);
        } else {
            const d9_xspan_mark *k = &m->span_marks[mk[im++]];
            if (!d9_time_window_holds(&m->window, k->ts)) continue; /* as the polls: in the window */
            if (k->begin) r = d9m_spans_begin(sm, k->ts, k->name, k->id, k->task, 0, 0);
            else r = d9m_spans_end(sm, k->ts, k->name, k->id, k->task, 0, 0);
        }
        if (r != 0 || c.failed) goto out;
    }
    if (d9m_spans_finish(sm, m->to) != 0 || c.failed) goto out;
    m->span_stray_ends = d9m_spans_stray_ends(sm);
    if (m->span_count) qsort(m->spans, m->span_count, sizeof *m->spans, cmp_span);
    rc = assign_lanes(m);
out:
    d9m_spans_free(sm);
    free(mk);
    free(pl);
    free(m->span_marks);
    free(m->poll_pieces);
    free(m->poll_piece_first);
    m->poll_pieces = NULL;
    m->poll_piece_first = NULL;
    m->span_marks = NULL;
    m->span_mark_count = m->span_mark_cap = 0;
    return rc;
}
