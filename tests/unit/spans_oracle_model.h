/* The span model (src/model/spans.c) as it was before wip-spanfeed's changes (the newest open
 * span out of the id index, a span reported from its slot, forgotten tasks' arrays reused): the
 * oracle of test_model_spans_oracle.c, which renames its functions and type before including
 * it so that both models live in one test. Not built on its own. */
#include "model/spans.h"

#include <stdlib.h>
#include <string.h>

#include "common/u64_map.h"
#include "model/wake_link.h"

enum { K_POLL, K_QUEUED, K_WAIT, K_KINDS };

typedef struct d9m_span_interval { /* an in-poll interval (the model reported them once) */
    uint64_t start, end;
    uint64_t task;
} d9m_span_interval;

/* One poll of a task and what led to it since its previous poll, as they come (one record a
 * poll, not three): waiting for a wake [wait_from, since), queued [since, start), polled
 * [start, end). A piece whose ends are equal (or out of order: polls of one task overlapping)
 * is empty. */
typedef struct cycle {
    uint64_t wait_from, since, start, end;
} cycle;

typedef struct ival_task {
    uint64_t start, end, task;
    uint8_t kind;
} ival_task;

/* A piece of a poll's attribution: a gap (part UNKNOWN) or an off-CPU interval. */
typedef struct sub_ival {
    uint64_t start, end;
    uint32_t stack; /* off-CPU: its switch-out's stack or D9M_SPAN_NO_STACK */
    uint8_t part;
} sub_ival;

typedef struct task_state {
    uint64_t id;
    d9m_wake_state wake;
    bool polled; /* a poll seen: wake.last_poll_end is its end */
    cycle *cy;   /* its polls since the oldest open span began, in time order */
    size_t n, cap, head; /* cy[head..n) live */
    sub_ival *sub; /* its polls' gaps and off-CPU intervals, kept as cy */
    size_t sn, scap, shead;
    uint64_t poll_start, poll_end, last_off_end; /* its latest poll, its latest off interval */
} task_state;

typedef struct open_span {
    d9m_span s;
    uint32_t next; /* next open span of the same id, +1; 0 none */
    uint32_t gen;  /* bumped when it closes: its entry in the begin queue is then stale */
    bool used;
} open_span;

/* An open span in the queue by begin time (its front is the oldest open span). */
typedef struct begin_entry {
    uint64_t ts;
    uint32_t slot, gen;
} begin_entry;

struct d9m_spans {
    d9m_span_fn done;
    void *ctx;
    d9_u64_map task_index; /* task id -> index into tasks */
    task_state *tasks;
    size_t ntasks, cap_tasks;
    d9_u64_map open_by_id; /* span id -> first open span index + 1 */
    open_span *open;
    size_t nopen_slots, cap_open, nopen;
    uint32_t free_head; /* a free slot + 1, chained through next */
    uint64_t now, oldest_open; /* oldest_open valid while nopen > 0 */
    begin_entry *bq;           /* the open spans by begin time, closed ones dropped lazily */
    size_t bq_head, bq_n, bq_cap;
    uint64_t hit_id;           /* the task found last, and its index (hit_ok: valid) */
    size_t hit_idx;
    bool hit_ok;
    uint64_t *dead;            /* terminated tasks to forget once no span is open */
    size_t ndead, cap_dead;
    uint64_t stray_ends, reopened;
    /* scratch for one span's split */
    ival_task *tmp;            /* the span's tasks' intervals, clipped */
    size_t tmp_n, tmp_cap;
    d9m_span_interval *merged; /* the union of its polls */
    size_t merged_cap;
    /* scratch for the split of its in-poll part by cause */
    d9m_span_interval *pa, *pb; /* the polls of its first and second task */
    size_t pa_cap, pb_cap;
    sub_ival *gaps, *offs;
    size_t gaps_cap, offs_cap;
    d9m_span_stack *stk;
    size_t nstk, stk_cap;
    const d9m_coverage *cov;
};

d9m_spans *d9m_spans_new(d9m_span_fn done, void *ctx) {
    d9m_spans *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->done = done;
    m->ctx = ctx;
    return m;
}

void d9m_spans_free(d9m_spans *m) {
    if (!m) return;
    for (size_t i = 0; i < m->ntasks; i++) {
        free(m->tasks[i].cy);
        free(m->tasks[i].sub);
    }
    free(m->tasks);
    d9_u64_map_free(&m->task_index);
    d9_u64_map_free(&m->open_by_id);
    free(m->open);
    free(m->bq);
    free(m->tmp);
    free(m->dead);
    free(m->merged);
    free(m->pa);
    free(m->pb);
    free(m->gaps);
    free(m->offs);
    free(m->stk);
    free(m);
}

uint64_t d9m_spans_stray_ends(const d9m_spans *m) { return m->stray_ends; }
uint64_t d9m_spans_reopened(const d9m_spans *m) { return m->reopened; }
size_t d9m_spans_tasks_held(const d9m_spans *m) { return m->ntasks; }

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

/* The task's state or NULL; a wake and the poll it leads to, a span mark inside that poll, ask
 * for the same task one after the other: the last one found is kept. */
static task_state *task_find(d9m_spans *m, uint64_t id) {
    if (m->hit_ok && m->hit_id == id) return &m->tasks[m->hit_idx];
    uint64_t *v = d9_u64_map_get(&m->task_index, id);
    if (!v) return NULL;
    m->hit_ok = true;
    m->hit_id = id;
    m->hit_idx = (size_t)*v;
    return &m->tasks[*v];
}

static task_state *task_get(d9m_spans *m, uint64_t id) {
    task_state *t = task_find(m, id);
    if (t) return t;
    if (!grow((void **)&m->tasks, &m->cap_tasks, m->ntasks + 1, sizeof *m->tasks)) return NULL;
    if (d9_u64_map_put(&m->task_index, id, m->ntasks) != 0) return NULL;
    t = &m->tasks[m->ntasks++];
    memset(t, 0, sizeof *t);
    t->id = id;
    return t;
}

/* Intervals that end before every open span began (or before now, when none is open) can no
 * longer count in any span. */
static uint64_t keep_from(const d9m_spans *m) { return m->nopen ? m->oldest_open : m->now; }

static inline uint64_t cycle_last(const cycle *c) { /* where its last piece ends */
    uint64_t e = c->end > c->start ? c->end : c->start;
    return e > c->since ? e : c->since;
}

static int add_cycle(d9m_spans *m, task_state *t, cycle c) {
    uint64_t from = keep_from(m);
    while (t->head < t->n && cycle_last(&t->cy[t->head]) <= from) t->head++;
    if (t->head == t->n) t->head = t->n = 0;
    if (cycle_last(&c) <= from) return 0;
    if (t->n == t->cap && t->head > 0) { /* reuse the pruned front before growing */
        memmove(t->cy, t->cy + t->head, (t->n - t->head) * sizeof *t->cy);
        t->n -= t->head;
        t->head = 0;
    }
    if (!grow((void **)&t->cy, &t->cap, t->n + 1, sizeof *t->cy)) return -1;
    t->cy[t->n++] = c;
    return 0;
}

static int add_sub(d9m_spans *m, task_state *t, uint64_t start, uint64_t end, uint8_t part,
                   uint32_t stack) {
    if (end <= start) return 0;
    uint64_t from = keep_from(m);
    while (t->shead < t->sn && t->sub[t->shead].end <= from) t->shead++;
    if (t->shead == t->sn) t->shead = t->sn = 0;
    if (end <= from) return 0;
    if (t->sn == t->scap && t->shead > 0) {
        memmove(t->sub, t->sub + t->shead, (t->sn - t->shead) * sizeof *t->sub);
        t->sn -= t->shead;
        t->shead = 0;
    }
    if (!grow((void **)&t->sub, &t->scap, t->sn + 1, sizeof *t->sub)) return -1;
    t->sub[t->sn++] = (sub_ival){start, end, stack, part};
    return 0;
}

static void see(d9m_spans *m, uint64_t ts) {
    if (ts > m->now) m->now = ts;
}

int d9m_spans_wake(d9m_spans *m, uint64_t task, uint64_t ts) {
    see(m, ts);
    if (task == 0) return 0;
    task_state *t = task_get(m, task);
    if (!t) return -1;
    d9m_wake_note(&t->wake, ts);
    return 0;
}

int d9m_spans_poll(d9m_spans *m, uint64_t task, uint64_t start, uint64_t end) {
    see(m, start);
    if (task == 0) return 0;
    task_state *t = task_get(m, task);
    if (!t) return -1;
    uint64_t prev_end = t->wake.last_poll_end;
    bool polled = t->polled;
    d9m_wake_link link;
    uint64_t since = start; /* when it became runnable for this poll */
    if (d9m_wake_poll(&t->wake, start, end, &link)) since = link.runnable_since;
    /* before its first poll the task's state is unknown, but for the wake that led to it */
    uint64_t wait_from = polled && prev_end < since ? prev_end : since;
    if (add_cycle(m, t, (cycle){wait_from, since, start, end}) != 0) return -1;
    t->polled = true;
    t->poll_start = start;
    t->poll_end = end;
    t->last_off_end = start;
    return 0;
}

void d9m_spans_set_coverage(d9m_spans *m, const d9m_coverage *c) { m->cov = c; }

int d9m_spans_poll_gap(d9m_spans *m, uint64_t task, uint64_t from, uint64_t to) {
    task_state *t = task ? task_find(m, task) : NULL;
    if (!t || !t->polled) return 0;
    if (from < t->poll_start) from = t->poll_start;
    if (to > t->poll_end) to = t->poll_end;
    return add_sub(m, t, from, to, D9M_PART_UNKNOWN, D9M_SPAN_NO_STACK);
}

int d9m_spans_poll_off(d9m_spans *m, uint64_t task, uint64_t from, uint64_t to, d9m_part part,
                       uint32_t stack) {
    task_state *t = task ? task_find(m, task) : NULL;
    if (!t || !t->polled || from >= t->poll_end || to <= from) return 0;
    if (part == D9M_PART_ON_CPU || part >= D9M_PART_UNKNOWN) part = D9M_PART_BLOCKED_OTHER;
    if (from < t->last_off_end) /* overlapping intervals of one thread: the poll is unknown */
        return add_sub(m, t, t->poll_start, t->poll_end, D9M_PART_UNKNOWN, D9M_SPAN_NO_STACK);
    if (to > t->poll_end) to = t->poll_end; /* the task's next poll may run on another thread */
    t->last_off_end = to;
    return add_sub(m, t, from, to, (uint8_t)part, part == D9M_PART_BLOCKED_OTHER ? stack : D9M_SPAN_NO_STACK);
}

void d9m_spans_poll_off_stack(d9m_spans *m, uint64_t task, uint32_t stack) {
    task_state *t = task ? task_find(m, task) : NULL;
    if (!t) return;
    for (size_t i = t->sn; i > t->shead; i--) {
        sub_ival *x = &t->sub[i - 1];
        if (x->part == D9M_PART_UNKNOWN) continue;
        if (x->part == D9M_PART_BLOCKED_OTHER && x->stack == D9M_SPAN_NO_STACK) x->stack = stack;
        return;
    }
}

static bool push_tmp(d9m_spans *m, int kind, uint64_t s, uint64_t e, uint64_t lo, uint64_t hi,
                     uint64_t task) {
    if (s < lo) s = lo;
    if (e > hi) e = hi;
    if (e <= s) return true;
    if (!grow((void **)&m->tmp, &m->tmp_cap, m->tmp_n + 1, sizeof *m->tmp)) return false;
    m->tmp[m->tmp_n++] = (ival_task){s, e, task, (uint8_t)kind};
    return true;
}

/* A task's intervals inside [lo, hi), its state after its last recorded interval included. */
static bool collect_task(d9m_spans *m, uint64_t id, uint64_t lo, uint64_t hi) {
    const task_state *t = task_find(m, id);
    if (!t) return true;
    for (size_t i = t->head; i < t->n; i++) {
        const cycle *c = &t->cy[i];
        if (!push_tmp(m, K_WAIT, c->wait_from, c->since, lo, hi, id) ||
            !push_tmp(m, K_QUEUED, c->since, c->start, lo, hi, id) ||
            !push_tmp(m, K_POLL, c->start, c->end, lo, hi, id))
            return false;
    }
    if (d9m_wake_pending(&t->wake)) { /* woken, its poll not started by hi */
        uint64_t since = t->wake.first_wake;
        if (t->polled && t->wake.last_poll_end > since) since = t->wake.last_poll_end;
        if (t->polled && !push_tmp(m, K_WAIT, t->wake.last_poll_end, since, lo, hi, id)) return false;
        return push_tmp(m, K_QUEUED, since, hi, lo, hi, id);
    }
    return !t->polled || push_tmp(m, K_WAIT, t->wake.last_poll_end, hi, lo, hi, id);
}

static int cmp_start(const void *a, const void *b) {
    const ival_task *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

/* By start: a few intervals per span, nearly in order (each task's are), so insertion sort,
 * which allocates nothing (qsort's merge sort did, per span). */
static void sort_by_start(ival_task *v, size_t n) {
    for (size_t i = 1; i < n; i++) {
        ival_task x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1].start > x.start) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* The lengths of the unions of the sorted scratch's intervals of kinds <= K_POLL, <= K_QUEUED
 * and <= K_WAIT, in one pass; the first union itself into `out` (room for tmp_n). */
static void unions(const d9m_spans *m, uint64_t len[K_KINDS], d9m_span_interval *out, size_t *nout) {
    uint64_t cur_s[K_KINDS] = {0}, cur_e[K_KINDS] = {0};
    bool open[K_KINDS] = {false};
    size_t k = 0;
    for (int u = 0; u < K_KINDS; u++) len[u] = 0;
    for (size_t i = 0; i < m->tmp_n; i++) {
        const ival_task *v = &m->tmp[i];
        for (int u = v->kind; u < K_KINDS; u++) {
            if (open[u] && v->start <= cur_e[u]) {
                if (v->end > cur_e[u]) cur_e[u] = v->end;
                if (u == K_POLL) out[k - 1].end = cur_e[u];
                continue;
            }
            if (open[u]) len[u] += cur_e[u] - cur_s[u];
            open[u] = true;
            cur_s[u] = v->start;
            cur_e[u] = v->end;
            if (u == K_POLL) out[k++] = (d9m_span_interval){v->start, v->end, v->task};
        }
    }
    for (int u = 0; u < K_KINDS; u++)
        if (open[u]) len[u] += cur_e[u] - cur_s[u];
    *nout = k;
}

/* ---- the in-poll part by cause ---- */

static void sort_sub(sub_ival *v, size_t n) { /* nearly in order: each comes in time order */
    for (size_t i = 1; i < n; i++) {
        sub_ival x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1].start > x.start) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* A task's polls, gaps (a sorted union) and off-CPU intervals (sorted) inside [lo, hi). */
static bool collect_attr(d9m_spans *m, const task_state *t, uint64_t lo, uint64_t hi,
                         d9m_span_interval **polls, size_t *polls_cap, size_t *npolls, size_t *ngaps,
                         size_t *noffs) {
    size_t np = 0, ng = 0, no = 0;
    for (size_t i = t->head; i < t->n; i++) {
        const cycle *v = &t->cy[i];
        uint64_t a = v->start > lo ? v->start : lo, b = v->end < hi ? v->end : hi;
        if (b <= a) continue;
        if (np && a <= (*polls)[np - 1].end) { /* polls of the task overlapping: their union */
            if (b > (*polls)[np - 1].end) (*polls)[np - 1].end = b;
            continue;
        }
        if (!grow((void **)polls, polls_cap, np + 1, sizeof **polls)) return false;
        (*polls)[np++] = (d9m_span_interval){a, b, t->id};
    }
    size_t need = t->sn - t->shead;
    if (!grow((void **)&m->gaps, &m->gaps_cap, need + 1, sizeof *m->gaps) ||
        !grow((void **)&m->offs, &m->offs_cap, need + 1, sizeof *m->offs))
        return false;
    for (size_t i = t->shead; i < t->sn; i++) {
        sub_ival v = t->sub[i];
        if (v.start < lo) v.start = lo;
        if (v.end > hi) v.end = hi;
        if (v.end <= v.start) continue;
        if (v.part == D9M_PART_UNKNOWN) m->gaps[ng++] = v;
        else m->offs[no++] = v;
    }
    sort_sub(m->gaps, ng);
    sort_sub(m->offs, no);
    size_t k = 0; /* the gaps' union: an inconsistent poll's gap may cover others */
    for (size_t i = 0; i < ng; i++) {
        if (k && m->gaps[i].start <= m->gaps[k - 1].end) {
            if (m->gaps[i].end > m->gaps[k - 1].end) m->gaps[k - 1].end = m->gaps[i].end;
        } else {
            m->gaps[k++] = m->gaps[i];
        }
    }
    *npolls = np;
    *ngaps = k;
    *noffs = no;
    return true;
}

/* The part of [a, b) in the sorted, disjoint v[from..n). */
static uint64_t overlap(const sub_ival *v, size_t n, size_t from, uint64_t a, uint64_t b) {
    uint64_t d = 0;
    for (size_t i = from; i < n && v[i].start < b; i++) {
        uint64_t x = v[i].start > a ? v[i].start : a, y = v[i].end < b ? v[i].end : b;
        if (y > x) d += y - x;
    }
    return d;
}

static bool add_stack(d9m_spans *m, uint32_t stack, uint64_t ns) {
    for (size_t i = 0; i < m->nstk; i++)
        if (m->stk[i].stack == stack) {
            m->stk[i].ns += ns;
            return true;
        }
    if (!grow((void **)&m->stk, &m->stk_cap, m->nstk + 1, sizeof *m->stk)) return false;
    m->stk[m->nstk++] = (d9m_span_stack){stack, ns};
    return true;
}

typedef struct piece_cursor {
    size_t ng, no, gi, oi; /* the gaps and offs in m->gaps / m->offs, and the first that may
                              reach the next piece (pieces come in time order) */
} piece_cursor;

/* [a, b) of a poll of the task whose attribution is in m->gaps / m->offs. */
static bool attribute_piece(d9m_spans *m, piece_cursor *c, uint64_t a, uint64_t b, d9m_parts *out) {
    if (b <= a) return true;
    while (c->gi < c->ng && m->gaps[c->gi].end <= a) c->gi++;
    while (c->oi < c->no && m->offs[c->oi].end <= a) c->oi++;
    uint64_t unknown = overlap(m->gaps, c->ng, c->gi, a, b), off = 0;
    for (size_t i = c->oi; i < c->no && m->offs[i].start < b; i++) {
        const sub_ival *o = &m->offs[i];
        uint64_t x = o->start > a ? o->start : a, y = o->end < b ? o->end : b;
        if (y <= x) continue;
        uint64_t d = (y - x) - overlap(m->gaps, c->ng, c->gi, x, y); /* a gap's part stays unknown */
        out->ns[o->part] += d;
        off += d;
        if (d && o->stack != D9M_SPAN_NO_STACK && !add_stack(m, o->stack, d)) return false;
    }
    out->ns[D9M_PART_UNKNOWN] += unknown;
    out->ns[D9M_PART_ON_CPU] += (b - a) - unknown - off;
    return true;
}

/* The in-poll part of [lo, hi) by cause: the first task's polls, then the second's where the
 * first is not polled (their union is the in-poll part). */
static bool split_polls(d9m_spans *m, uint64_t first, uint64_t second, uint64_t lo, uint64_t hi,
                        uint64_t poll_ns, d9m_parts *out) {
    *out = (d9m_parts){{0}};
    m->nstk = 0;
    const task_state *ta = first ? task_find(m, first) : NULL;
    const task_state *tb = second && second != first ? task_find(m, second) : NULL;
    if ((!ta || ta->sn == ta->shead) && (!tb || tb->sn == tb->shead)) {
        out->ns[D9M_PART_ON_CPU] = poll_ns; /* no gap, no off-CPU interval: the usual poll */
        return true;
    }
    size_t na = 0, nb = 0;
    piece_cursor c = {0};
    if (ta) {
        if (!collect_attr(m, ta, lo, hi, &m->pa, &m->pa_cap, &na, &c.ng, &c.no)) return false;
        for (size_t i = 0; i < na; i++)
            if (!attribute_piece(m, &c, m->pa[i].start, m->pa[i].end, out)) return false;
    }
    if (!tb) return true;
    c = (piece_cursor){0};
    if (!collect_attr(m, tb, lo, hi, &m->pb, &m->pb_cap, &nb, &c.ng, &c.no)) return false;
    size_t j = 0;
    for (size_t i = 0; i < nb; i++) { /* pb[i] minus the first task's polls */
        uint64_t cur = m->pb[i].start, e = m->pb[i].end;
        while (j < na && m->pa[j].end <= cur) j++;
        for (size_t k = j; cur < e;) {
            if (k < na && m->pa[k].start < e) {
                if (m->pa[k].start > cur && !attribute_piece(m, &c, cur, m->pa[k].start, out)) return false;
                if (m->pa[k].end > cur) cur = m->pa[k].end;
                k++;
            } else {
                if (!attribute_piece(m, &c, cur, e, out)) return false;
                cur = e;
            }
        }
    }
    return true;
}

/* The last drop of the trace inside [lo, hi], or lo when none: the span is unknown up to it. */
static uint64_t unknown_until(const d9m_spans *m, uint64_t lo, uint64_t hi) {
    const d9m_coverage *c = m->cov;
    if (!c) return lo;
    if (c->failed) return hi;
    size_t a = 0, b = c->ndrops; /* the first drop after hi */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (c->drops[mid].ts <= hi) a = mid + 1;
        else b = mid;
    }
    return a > 0 && c->drops[a - 1].ts > lo ? c->drops[a - 1].ts : lo;
}

/* One task's clipped pieces in time order, disjoint: each part is the sum of its kind's
 * lengths, and the in-poll intervals are its polls (touching ones joined, as a union does). */
typedef struct one_task_sum {
    uint64_t len[K_KINDS], prev_end, task;
    d9m_span_interval *polls;
    size_t npolls;
    bool overlap; /* two pieces overlap: the sums are not the union's lengths */
} one_task_sum;

static inline void sum_piece(one_task_sum *o, int kind, uint64_t s, uint64_t e, uint64_t lo, uint64_t hi) {
    if (s < lo) s = lo;
    if (e > hi) e = hi;
    if (e <= s) return;
    if (s < o->prev_end) o->overlap = true;
    o->prev_end = e;
    o->len[kind] += e - s;
    if (kind != K_POLL) return;
    if (o->npolls && o->polls[o->npolls - 1].end == s) o->polls[o->npolls - 1].end = e;
    else o->polls[o->npolls++] = (d9m_span_interval){s, e, o->task};
}

/* The split over one task without a sort or a copy: its intervals since the oldest open span
 * began, read in place, then its state after them (as collect_task). False when two of them
 * overlap (polls of one task overlapping, a wake during a poll): the caller takes the union
 * then. m->merged gets the in-poll intervals. */
static bool split_one_task(d9m_spans *m, const task_state *t, uint64_t lo, uint64_t hi, uint64_t len[K_KINDS],
                           size_t *npolls, bool *ok) {
    *ok = true;
    if (!grow((void **)&m->merged, &m->merged_cap, t->n - t->head + 2, sizeof *m->merged)) {
        *ok = false;
        return true;
    }
    one_task_sum o = {.polls = m->merged, .task = t->id};
    for (size_t i = t->head; i < t->n && !o.overlap; i++) {
        const cycle *c = &t->cy[i];
        sum_piece(&o, K_WAIT, c->wait_from, c->since, lo, hi);
        sum_piece(&o, K_QUEUED, c->since, c->start, lo, hi);
        sum_piece(&o, K_POLL, c->start, c->end, lo, hi);
    }
    if (d9m_wake_pending(&t->wake)) {
        uint64_t since = t->wake.first_wake;
        if (t->polled && t->wake.last_poll_end > since) since = t->wake.last_poll_end;
        if (t->polled) sum_piece(&o, K_WAIT, t->wake.last_poll_end, since, lo, hi);
        sum_piece(&o, K_QUEUED, since, hi, lo, hi);
    } else if (t->polled) {
        sum_piece(&o, K_WAIT, t->wake.last_poll_end, hi, lo, hi);
    }
    if (o.overlap) return false;
    len[K_POLL] = o.len[K_POLL];
    len[K_QUEUED] = len[K_POLL] + o.len[K_QUEUED];
    len[K_WAIT] = len[K_QUEUED] + o.len[K_WAIT];
    *npolls = o.npolls;
    return true;
}

/* The general split: the tasks' intervals collected, sorted and united. */
static int split_union(d9m_spans *m, const d9m_span *s, uint64_t lo, uint64_t hi, uint64_t len[K_KINDS],
                       size_t *n) {
    m->tmp_n = 0;
    if (s->begin_task && !collect_task(m, s->begin_task, lo, hi)) return -1;
    if (s->end_task && s->end_task != s->begin_task && !collect_task(m, s->end_task, lo, hi))
        return -1;
    if (m->tmp_n > 64) qsort(m->tmp, m->tmp_n, sizeof *m->tmp, cmp_start);
    else sort_by_start(m->tmp, m->tmp_n);
    if (!grow((void **)&m->merged, &m->merged_cap, m->tmp_n + 1, sizeof *m->merged)) return -1;
    unions(m, len, m->merged, n);
    return 0;
}

/* Split s over its tasks and report it. */
static int report(d9m_spans *m, d9m_span *s) {
    uint64_t lo = s->begin_ts, hi = s->end_ts > s->begin_ts ? s->end_ts : s->begin_ts;
    uint64_t elapsed = hi - lo;
    lo = unknown_until(m, lo, hi); /* [begin, lo) unknown */
    size_t n = 0;
    uint64_t len[K_KINDS] = {0};
    bool fast = false;
    if (!s->begin_task || !s->end_task || s->begin_task == s->end_task) { /* one task, or none */
        uint64_t id = s->begin_task ? s->begin_task : s->end_task;
        const task_state *t = id ? task_find(m, id) : NULL;
        bool ok = true;
        fast = !t || split_one_task(m, t, lo, hi, len, &n, &ok);
        if (!ok) return -1;
    }
    if (!fast && split_union(m, s, lo, hi, len, &n) != 0) return -1;
    uint64_t u_poll = len[K_POLL], u_queued = len[K_QUEUED], u_wait = len[K_WAIT];
    /* higher kinds take precedence: each part is what its union adds to the ones before */
    s->parts = (d9m_span_parts){.poll_ns = u_poll, .queued_ns = u_queued - u_poll,
                                .wait_ns = u_wait - u_queued, .unknown_ns = elapsed - u_wait};
    uint64_t first = s->begin_task ? s->begin_task : s->end_task;
    if (!split_polls(m, first, s->end_task, lo, hi, u_poll, &s->poll_parts)) return -1;
    (void)n; /* its in-poll intervals: the model no longer reports them */
    s->poll_stacks = m->stk;
    s->npoll_stacks = m->nstk;
    if (m->done) m->done(m->ctx, s);
    s->poll_stacks = NULL;
    s->npoll_stacks = 0;
    return 0;
}

static void forget_task(d9m_spans *m, uint64_t id) {
    uint64_t *v = d9_u64_map_get(&m->task_index, id);
    if (!v) return;
    m->hit_ok = false; /* the last task moves */
    size_t i = (size_t)*v;
    d9_u64_map_remove(&m->task_index, id);
    free(m->tasks[i].cy);
    free(m->tasks[i].sub);
    if (i != m->ntasks - 1) { /* the last one moves into its slot */
        m->tasks[i] = m->tasks[m->ntasks - 1];
        *d9_u64_map_get(&m->task_index, m->tasks[i].id) = i;
    }
    m->ntasks--;
}

static void forget_dead(d9m_spans *m) {
    for (size_t i = 0; i < m->ndead; i++) forget_task(m, m->dead[i]);
    m->ndead = 0;
}

int d9m_spans_terminate(d9m_spans *m, uint64_t task) {
    if (!d9_u64_map_get(&m->task_index, task)) return 0;
    if (m->nopen == 0) {
        forget_task(m, task);
        return 0;
    }
    if (!grow((void **)&m->dead, &m->cap_dead, m->ndead + 1, sizeof *m->dead)) return -1;
    m->dead[m->ndead++] = task;
    return 0;
}

/* The oldest open span's begin: the queue's front, once the closed spans before it are gone
 * (each entry is dropped once: no scan of the open spans at each end). */
static void recompute_oldest(d9m_spans *m) {
    while (m->bq_head < m->bq_n) {
        const begin_entry *b = &m->bq[m->bq_head];
        const open_span *o = &m->open[b->slot];
        if (o->used && o->gen == b->gen) {
            m->oldest_open = b->ts;
            return;
        }
        m->bq_head++;
    }
}

/* Open span `slot` began at ts: into the queue, which stays in begin order (an earlier begin
 * than the last one, out of the time order, is put in its place). */
static int queue_begin(d9m_spans *m, uint64_t ts, uint32_t slot) {
    if (m->bq_head == m->bq_n) m->bq_head = m->bq_n = 0;
    if (m->bq_n == m->bq_cap && m->bq_head > 0) { /* reuse the dropped front before growing */
        memmove(m->bq, m->bq + m->bq_head, (m->bq_n - m->bq_head) * sizeof *m->bq);
        m->bq_n -= m->bq_head;
        m->bq_head = 0;
    }
    if (!grow((void **)&m->bq, &m->bq_cap, m->bq_n + 1, sizeof *m->bq)) return -1;
    size_t i = m->bq_n++;
    for (; i > m->bq_head && m->bq[i - 1].ts > ts; i--) m->bq[i] = m->bq[i - 1];
    m->bq[i] = (begin_entry){ts, slot, m->open[slot].gen};
    return 0;
}

/* Unlink open span `idx` (its id's chain starts at *head, +1). */
static void close_slot(d9m_spans *m, uint32_t idx) {
    uint64_t id = m->open[idx].s.id;
    uint64_t *head = d9_u64_map_get(&m->open_by_id, id);
    if (head) {
        if (*head == (uint64_t)idx + 1) {
            if (m->open[idx].next) *head = m->open[idx].next;
            else d9_u64_map_remove(&m->open_by_id, id);
        } else {
            for (uint32_t j = (uint32_t)*head - 1;; j = m->open[j].next - 1) {
                if (m->open[j].next == idx + 1) {
                    m->open[j].next = m->open[idx].next;
                    break;
                }
                if (!m->open[j].next) break;
            }
        }
    }
    uint64_t begin = m->open[idx].s.begin_ts;
    m->open[idx].used = false;
    m->open[idx].gen++;
    m->open[idx].next = m->free_head;
    m->free_head = idx + 1;
    m->nopen--;
    if (m->nopen && begin == m->oldest_open) recompute_oldest(m);
    if (!m->nopen) {
        forget_dead(m);
        m->bq_head = m->bq_n = 0;
    }
}

static int64_t find_open(const d9m_spans *m, uint32_t name, uint64_t id) {
    uint64_t *head = d9_u64_map_get(&m->open_by_id, id);
    if (!head) return -1;
    for (uint32_t j = (uint32_t)*head; j; j = m->open[j - 1].next)
        if (m->open[j - 1].s.name == name) return (int64_t)j - 1;
    return -1;
}

int d9m_spans_begin(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                    uint64_t worker, uint64_t tid) {
    see(m, ts);
    int64_t prev = find_open(m, name, id);
    if (prev >= 0) { /* its end never came: reported unended, up to this begin */
        m->reopened++;
        d9m_span s = m->open[prev].s;
        close_slot(m, (uint32_t)prev);
        s.end_ts = ts;
        if (report(m, &s) != 0) return -1;
    }
    uint32_t idx;
    if (m->free_head) {
        idx = m->free_head - 1;
        m->free_head = m->open[idx].next;
    } else {
        if (!grow((void **)&m->open, &m->cap_open, m->nopen_slots + 1, sizeof *m->open)) return -1;
        idx = (uint32_t)m->nopen_slots++;
        m->open[idx].gen = 0;
    }
    uint64_t *head = d9_u64_map_upsert(&m->open_by_id, id, 0);
    if (!head) {
        m->open[idx].used = false;
        m->open[idx].next = m->free_head;
        m->free_head = idx + 1;
        return -1;
    }
    m->open[idx] = (open_span){.s = {.name = name, .id = id, .begin_ts = ts, .begin_task = task,
                                     .begin_worker = worker, .begin_tid = tid},
                               .next = (uint32_t)*head, .gen = m->open[idx].gen, .used = true};
    *head = idx + 1;
    if (queue_begin(m, ts, idx) != 0) {
        m->open[idx].used = false; /* unlinked as it was linked: at its id's head */
        *head = m->open[idx].next;
        if (!*head) d9_u64_map_remove(&m->open_by_id, id);
        m->open[idx].next = m->free_head;
        m->free_head = idx + 1;
        return -1;
    }
    if (m->nopen++ == 0 || ts < m->oldest_open) m->oldest_open = ts;
    return 0;
}

int d9m_spans_end(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                  uint64_t worker, uint64_t tid) {
    see(m, ts);
    int64_t idx = find_open(m, name, id);
    if (idx < 0) {
        m->stray_ends++;
        return 0;
    }
    d9m_span s = m->open[idx].s;
    s.end_ts = ts;
    s.end_task = task;
    s.end_worker = worker;
    s.end_tid = tid;
    s.ended = true;
    int rc = report(m, &s); /* before closing: its intervals are still kept */
    close_slot(m, (uint32_t)idx);
    return rc;
}

static int cmp_begin(const void *a, const void *b) {
    const d9m_span *x = a, *y = b;
    return x->begin_ts < y->begin_ts ? -1 : x->begin_ts > y->begin_ts ? 1 : 0;
}

int d9m_spans_finish(d9m_spans *m, uint64_t end_ts) {
    see(m, end_ts);
    if (m->nopen == 0) return 0;
    d9m_span *left = malloc(m->nopen * sizeof *left);
    if (!left) return -1;
    size_t n = 0;
    for (size_t i = 0; i < m->nopen_slots; i++)
        if (m->open[i].used) left[n++] = m->open[i].s;
    qsort(left, n, sizeof *left, cmp_begin); /* a stable order for the readers */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        left[i].end_ts = end_ts;
        left[i].ended = false;
        rc = report(m, &left[i]);
    }
    free(left);
    for (size_t i = 0; i < m->nopen_slots; i++)
        if (m->open[i].used) close_slot(m, (uint32_t)i);
    return rc;
}
