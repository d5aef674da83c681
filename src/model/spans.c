#include "model/spans.h"

#include <stdlib.h>
#include <string.h>

#include "common/u64_map.h"
#include "model/wake_link.h"

enum { K_POLL, K_QUEUED, K_WAIT, K_KINDS };

typedef struct ival {
    uint64_t start, end;
    uint8_t kind;
} ival;

typedef struct ival_task {
    uint64_t start, end, task;
    uint8_t kind;
} ival_task;

typedef struct task_state {
    uint64_t id;
    d9m_wake_state wake;
    bool polled; /* a poll seen: wake.last_poll_end is its end */
    ival *iv;    /* since the oldest open span began, in arrival order */
    size_t n, cap, head; /* iv[head..n) live */
} task_state;

typedef struct open_span {
    d9m_span s;
    uint32_t next; /* next open span of the same id, +1; 0 none */
    bool used;
} open_span;

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
    uint64_t *dead;            /* terminated tasks to forget once no span is open */
    size_t ndead, cap_dead;
    uint64_t stray_ends, reopened;
    /* scratch for one span's split */
    ival_task *tmp;            /* the span's tasks' intervals, clipped */
    size_t tmp_n, tmp_cap;
    d9m_span_interval *merged; /* the union of its polls */
    size_t merged_cap;
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
    for (size_t i = 0; i < m->ntasks; i++) free(m->tasks[i].iv);
    free(m->tasks);
    d9_u64_map_free(&m->task_index);
    d9_u64_map_free(&m->open_by_id);
    free(m->open);
    free(m->tmp);
    free(m->dead);
    free(m->merged);
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

static task_state *task_get(d9m_spans *m, uint64_t id) {
    uint64_t *v = d9_u64_map_get(&m->task_index, id);
    if (v) return &m->tasks[*v];
    if (!grow((void **)&m->tasks, &m->cap_tasks, m->ntasks + 1, sizeof *m->tasks)) return NULL;
    if (d9_u64_map_put(&m->task_index, id, m->ntasks) != 0) return NULL;
    task_state *t = &m->tasks[m->ntasks++];
    memset(t, 0, sizeof *t);
    t->id = id;
    return t;
}

/* Intervals that end before every open span began (or before now, when none is open) can no
 * longer count in any span. */
static uint64_t keep_from(const d9m_spans *m) { return m->nopen ? m->oldest_open : m->now; }

static int add_ival(d9m_spans *m, task_state *t, uint64_t start, uint64_t end, uint8_t kind) {
    if (end <= start) return 0;
    uint64_t from = keep_from(m);
    while (t->head < t->n && t->iv[t->head].end <= from) t->head++;
    if (t->head == t->n) t->head = t->n = 0;
    if (end <= from) return 0;
    if (t->n == t->cap && t->head > 0) { /* reuse the pruned front before growing */
        memmove(t->iv, t->iv + t->head, (t->n - t->head) * sizeof *t->iv);
        t->n -= t->head;
        t->head = 0;
    }
    if (!grow((void **)&t->iv, &t->cap, t->n + 1, sizeof *t->iv)) return -1;
    t->iv[t->n++] = (ival){start, end, kind};
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
    if (polled && prev_end < since && add_ival(m, t, prev_end, since, K_WAIT) != 0) return -1;
    if (add_ival(m, t, since, start, K_QUEUED) != 0) return -1;
    if (add_ival(m, t, start, end, K_POLL) != 0) return -1;
    t->polled = true;
    return 0;
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
    uint64_t *v = d9_u64_map_get(&m->task_index, id);
    if (!v) return true;
    const task_state *t = &m->tasks[*v];
    for (size_t i = t->head; i < t->n; i++)
        if (!push_tmp(m, t->iv[i].kind, t->iv[i].start, t->iv[i].end, lo, hi, id)) return false;
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

/* The length of the union of the sorted scratch's intervals of kinds [0..upto]; with `out`,
 * that union too (room for tmp_n). */
static uint64_t union_len(const d9m_spans *m, int upto, d9m_span_interval *out, size_t *nout) {
    uint64_t total = 0, cur_s = 0, cur_e = 0;
    bool open = false;
    size_t k = 0;
    for (size_t i = 0; i < m->tmp_n; i++) {
        const ival_task *v = &m->tmp[i];
        if (v->kind > upto) continue;
        if (open && v->start <= cur_e) {
            if (v->end > cur_e) cur_e = v->end;
            continue;
        }
        if (open) {
            total += cur_e - cur_s;
            if (out) out[k - 1].end = cur_e;
        }
        open = true;
        cur_s = v->start;
        cur_e = v->end;
        if (out) out[k++] = (d9m_span_interval){cur_s, cur_e, v->task};
    }
    if (open) {
        total += cur_e - cur_s;
        if (out) out[k - 1].end = cur_e;
    }
    if (nout) *nout = k;
    return total;
}

/* Split s over its tasks and report it. */
static int report(d9m_spans *m, d9m_span *s) {
    uint64_t lo = s->begin_ts, hi = s->end_ts > s->begin_ts ? s->end_ts : s->begin_ts;
    m->tmp_n = 0;
    if (s->begin_task && !collect_task(m, s->begin_task, lo, hi)) return -1;
    if (s->end_task && s->end_task != s->begin_task && !collect_task(m, s->end_task, lo, hi))
        return -1;
    if (m->tmp_n > 64) qsort(m->tmp, m->tmp_n, sizeof *m->tmp, cmp_start);
    else sort_by_start(m->tmp, m->tmp_n);
    if (!grow((void **)&m->merged, &m->merged_cap, m->tmp_n + 1, sizeof *m->merged)) return -1;
    size_t n;
    uint64_t u_poll = union_len(m, K_POLL, m->merged, &n);
    uint64_t u_queued = union_len(m, K_QUEUED, NULL, NULL);
    uint64_t u_wait = union_len(m, K_WAIT, NULL, NULL);
    /* higher kinds take precedence: each part is what its union adds to the ones before */
    s->parts = (d9m_span_parts){.poll_ns = u_poll, .queued_ns = u_queued - u_poll,
                                .wait_ns = u_wait - u_queued, .unknown_ns = (hi - lo) - u_wait};
    s->polls = m->merged;
    s->npolls = n;
    if (m->done) m->done(m->ctx, s);
    s->polls = NULL;
    s->npolls = 0;
    return 0;
}

static void forget_task(d9m_spans *m, uint64_t id) {
    uint64_t *v = d9_u64_map_get(&m->task_index, id);
    if (!v) return;
    size_t i = (size_t)*v;
    d9_u64_map_remove(&m->task_index, id);
    free(m->tasks[i].iv);
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

static void recompute_oldest(d9m_spans *m) {
    bool any = false;
    for (size_t i = 0; i < m->nopen_slots; i++)
        if (m->open[i].used && (!any || m->open[i].s.begin_ts < m->oldest_open)) {
            m->oldest_open = m->open[i].s.begin_ts;
            any = true;
        }
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
    m->open[idx].next = m->free_head;
    m->free_head = idx + 1;
    m->nopen--;
    if (m->nopen && begin == m->oldest_open) recompute_oldest(m);
    if (!m->nopen) forget_dead(m);
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
                               .next = (uint32_t)*head, .used = true};
    *head = idx + 1;
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
