#include "model/spans.h"

#include <stdlib.h>
#include <string.h>

#include "common/u64_map.h"
#include "model/wake_link.h"

enum { K_POLL, K_QUEUED, K_WAIT, K_KINDS };

/* One poll of a task and what led to it since its previous poll, as they come (one record a
 * poll, not three): waiting for a wake [wait_from, since), queued [since, start), polled
 * [start, end). A piece whose ends are equal (or out of order: polls of one task overlapping)
 * is empty. */
typedef struct cycle {
    uint64_t wait_from, since, start, end;
    uint64_t reach; /* the latest end of the pieces of this record and those before it in its
                       array: nondecreasing, so a span's split finds its first record from the
                       newest back, not reading every record since the oldest open span began */
    bool unknown;   /* all of its poll is unknown: a gap over all of it, or off-CPU intervals
                       of its thread overlapping (a broken trace); kept here, not as a gap among
                       the task's gaps and off-CPU intervals, so that its off-CPU intervals stay
                       in order there and the split reads them in place */
} cycle;

typedef struct d9m_span_interval {
    uint64_t start, end; /* [start, end) ns */
    uint64_t task;
} d9m_span_interval; /* a poll of a task inside a span */

typedef struct ival_task {
    uint64_t start, end, task;
    uint8_t kind;
} ival_task;

/* A piece of a poll's attribution: a gap (part UNKNOWN) or an off-CPU interval. */
typedef struct sub_ival {
    uint64_t start, end;
    uint64_t reach; /* the latest end of this one and those before it in its array (as cycle's) */
    uint32_t stack; /* off-CPU: its switch-out's stack or D9M_SPAN_NO_STACK */
    uint8_t part;
} sub_ival;

/* A task's state: held by the reader (d9m_spans_task_*) or found by id (task_index). */
typedef struct d9m_span_task {
    uint64_t id;
    d9m_wake_state wake;
    bool polled; /* a poll seen: wake.last_poll_end is its end */
    cycle *cy;   /* its polls since the oldest open span began, in time order */
    size_t n, cap, head; /* cy[head..n) live */
    sub_ival *sub; /* its polls' gaps and off-CPU intervals, kept as cy */
    size_t sn, scap, shead;
    bool sub_overlap; /* two of sub[shead..sn) overlap or came out of order (an inconsistent
                         poll, a broken trace): the split by cause copies, sorts and unites
                         them; else it reads them in place (split_polls) */
    uint64_t poll_start, poll_end, last_off_end; /* its latest poll, its latest off interval */
    uint64_t reach_all;   /* the latest end of its pieces so far */
    bool latest_kept;     /* cy[n - 1] is its latest poll's record */
    uint64_t overlap_end; /* its pieces overlap before this time (0: never) */
    uint32_t gen;         /* bumped when the state is reused (d9m_span_task_gen) */
    bool dead;            /* terminated, kept until no span is open */
    bool in_index;        /* found by id (task_index) */
    struct d9m_span_task *next_free;
} task_state;

typedef struct open_span {
    d9m_span s;
    task_state *begin_t; /* the state of s.begin_task when the span began (NULL: none known
                            then, looked up by id at its end) */
    uint32_t next; /* next open span of the same id, +1; 0 none */
    uint32_t gen;  /* bumped when it closes: its entry in the begin queue is then stale */
    bool used;
} open_span;

/* An open span in the queue by begin time (its front, once the closed ones are dropped, is the
 * oldest open span). */
typedef struct begin_entry {
    uint64_t ts;
    uint32_t slot, gen;
} begin_entry;

#define ID_TABLE 1024 /* entries of the open spans' direct-mapped index by id (a power of two) */

#define SLAB_TASKS 256 /* task states are allocated this many at a time and never move: a
                           reader holds pointers to them */

struct d9m_spans {
    d9m_span_fn done;
    void *ctx;
    d9_u64_map task_index; /* task id -> its state, for the inputs by id */
    task_state **slabs;    /* every state made, SLAB_TASKS a slab */
    size_t nslabs, slab_used, slabs_cap;
    task_state *free_tasks; /* forgotten states, their arrays kept, for the next new tasks (a
                               server's task per request would otherwise allocate and free two
                               arrays each) */
    size_t ntasks;          /* states held: made, not forgotten */
    /* the open spans of an id, newest first, chained through next: the chain's head (slot + 1)
     * in the direct-mapped table when its entry holds that id's chain (ids are most often
     * sequential: a server's requests), else in open_by_id (an id whose entry another id held) */
    uint32_t id_table[ID_TABLE];
    d9_u64_map open_by_id;
    open_span *open;
    size_t nopen_slots, cap_open, nopen;
    uint32_t free_head; /* a free slot + 1, chained through next */
    uint32_t unindexed; /* the newest open span's slot + 1 while it is not in the index (0:
                           none): most spans end before the next begins, and then never touch
                           it; it goes in when another span begins */
    uint64_t now;
    uint64_t open_floor; /* while nopen > 0: at or before every open span's begin (the oldest's
                            when last computed, keep_from_exact; not raised as spans close) */
    begin_entry *bq;     /* the open spans by begin time, closed ones dropped from its front
                            when the oldest is asked for */
    size_t bq_head, bq_n, bq_cap;
    task_state *hit;           /* the task found by id last (NULL: none) */
    task_state **dead;         /* terminated tasks to forget once no span is open */
    size_t ndead, cap_dead;
    uint64_t stray_ends, reopened;
    /* scratch for one span's split */
    struct piece *pcs;         /* the span's tasks' pieces (split_walk) */
    size_t pcs_cap;
    ival_task *tmp;            /* the span's tasks' intervals, clipped (split_union) */
    size_t tmp_n, tmp_cap;
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
    for (size_t i = 0; i < m->nslabs; i++) { /* slabs are zeroed: unused states hold no array */
        for (size_t j = 0; j < SLAB_TASKS; j++) {
            free(m->slabs[i][j].cy);
            free(m->slabs[i][j].sub);
        }
        free(m->slabs[i]);
    }
    free(m->slabs);
    d9_u64_map_free(&m->task_index);
    d9_u64_map_free(&m->open_by_id);
    free(m->open);
    free(m->bq);
    free(m->tmp);
    free(m->pcs);
    free(m->dead);
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

d9m_span_task *d9m_spans_task_new(d9m_spans *m, uint64_t task_id) {
    task_state *t = m->free_tasks;
    if (t) { /* a forgotten task's state: its arrays (emptied) are kept */
        m->free_tasks = t->next_free;
        *t = (task_state){.cy = t->cy, .cap = t->cap, .sub = t->sub, .scap = t->scap, .gen = t->gen};
    } else {
        if (m->nslabs == 0 || m->slab_used == SLAB_TASKS) {
            if (!grow((void **)&m->slabs, &m->slabs_cap, m->nslabs + 1, sizeof *m->slabs)) return NULL;
            task_state *slab = calloc(SLAB_TASKS, sizeof *slab);
            if (!slab) return NULL;
            m->slabs[m->nslabs++] = slab;
            m->slab_used = 0;
        }
        t = &m->slabs[m->nslabs - 1][m->slab_used++];
    }
    t->id = task_id;
    m->ntasks++;
    return t;
}

uint32_t d9m_span_task_gen(const d9m_span_task *t) { return t->gen; }

/* The task's state by id or NULL; a wake and the poll it leads to, a span mark inside that
 * poll, ask for the same task one after the other: the last one found is kept. */
static task_state *task_find(d9m_spans *m, uint64_t id) {
    if (m->hit && m->hit->id == id) return m->hit;
    uint64_t *v = d9_u64_map_get(&m->task_index, id);
    if (!v) return NULL;
    m->hit = (task_state *)(uintptr_t)*v;
    return m->hit;
}

static task_state *task_get(d9m_spans *m, uint64_t id) {
    task_state *t = task_find(m, id);
    if (t) return t;
    t = d9m_spans_task_new(m, id);
    if (!t) return NULL;
    if (d9_u64_map_put(&m->task_index, id, (uint64_t)(uintptr_t)t) != 0) {
        t->next_free = m->free_tasks; /* not held: back to the free states */
        m->free_tasks = t;
        m->ntasks--;
        return NULL;
    }
    t->in_index = true;
    return t;
}

/* Intervals that end before every open span began (or before now, when none is open) can no
 * longer count in any span: those that end by keep_from are not kept (a bound, cheap: closing a
 * span does not raise it); a task's records are dropped up to the exact one when its array is
 * full (keep_from_exact: the begin queue's front once its closed spans are dropped, each
 * once), not at every poll. */
static inline uint64_t keep_from(const d9m_spans *m) { return m->nopen ? m->open_floor : m->now; }

static uint64_t keep_from_exact(d9m_spans *m) {
    if (!m->nopen) return m->now;
    while (m->bq_head < m->bq_n) {
        const begin_entry *b = &m->bq[m->bq_head];
        const open_span *o = &m->open[b->slot];
        if (o->used && o->gen == b->gen) return m->open_floor = b->ts;
        m->bq_head++;
    }
    return m->open_floor; /* not reached: an open span is in the queue */
}

/* Open span `slot` began at ts: into the queue, which stays in begin order (an earlier begin
 * than the last one, out of the time order, is put in its place). */
static __attribute__((noinline)) int queue_begin_slow(d9m_spans *m, uint64_t ts, uint32_t slot) {
    if (m->bq_n == m->bq_cap && m->bq_cap) {
        (void)keep_from_exact(m); /* full: its closed front dropped first */
        size_t live = m->bq_n - m->bq_head;
        if (live <= m->bq_cap / 2) { /* its room reused; over half live: grown below, so that the
                                        next drop is as many begins away */
            memmove(m->bq, m->bq + m->bq_head, live * sizeof *m->bq);
            m->bq_n = live;
            m->bq_head = 0;
        }
    }
    if (m->bq_n == m->bq_cap && !grow((void **)&m->bq, &m->bq_cap, m->bq_n + 1, sizeof *m->bq)) return -1;
    size_t i = m->bq_n++;
    for (; i > m->bq_head && m->bq[i - 1].ts > ts; i--) m->bq[i] = m->bq[i - 1];
    m->bq[i] = (begin_entry){ts, slot, m->open[slot].gen};
    return 0;
}

/* Inline: a begin in time order with room is one store. */
static inline __attribute__((always_inline)) int queue_begin(d9m_spans *m, uint64_t ts, uint32_t slot) {
    if (__builtin_expect(m->bq_n < m->bq_cap && (m->bq_n == m->bq_head || m->bq[m->bq_n - 1].ts <= ts), 1)) {
        m->bq[m->bq_n++] = (begin_entry){ts, slot, m->open[slot].gen};
        return 0;
    }
    return queue_begin_slow(m, ts, slot);
}

static inline uint64_t cycle_last(const cycle *c) { /* where its last piece ends */
    uint64_t e = c->end > c->start ? c->end : c->start;
    return e > c->since ? e : c->since;
}

/* The task's pieces stay in time order and disjoint while each record's wait, queued and poll
 * follow each other (wait_from <= since by construction, since <= start <= end) from the
 * latest end before them on; when they do not (its polls overlap), the split of a span that
 * reaches before the end of what overlaps takes the union (overlap_end). Returns where c's last
 * piece ends (its poll's end, when in order). */
static inline uint64_t check_order(task_state *t, const cycle *c) {
    /* in order, its first nonempty piece begins at wait_from (wait_from <= since always) */
    if (c->wait_from >= t->reach_all && c->since <= c->start && c->start <= c->end) return t->reach_all = c->end;
    uint64_t last = cycle_last(c);
    t->overlap_end = t->reach_all = last > t->reach_all ? last : t->reach_all;
    return last;
}

/* Room for k more entries in an array whose entries [head, n) are live: the dead front's slots
 * reused first, else the array grown. Out of line: the appends below stay short. */
static __attribute__((noinline)) bool make_room(void **v, size_t *cap, size_t *head, size_t *n, size_t k,
                                                size_t size) {
    if (*head > 0) {
        memmove(*v, (char *)*v + *head * size, (*n - *head) * size);
        *n -= *head;
        *head = 0;
        if (*cap - *n >= k) return true;
    }
    return grow(v, cap, *n + k, size);
}

/* The task's records are full: those whose pieces all end before every open span (their
 * running reach: the first that reaches past stays, and those after it) go first; over half
 * still live, the array is doubled, so that the next drop is as many polls away. Out of line:
 * the poll's call stays short. 0, or -1 when out of memory. */
static __attribute__((noinline)) int cycle_room(d9m_spans *m, task_state *t) {
    uint64_t from = keep_from_exact(m);
    /* the first whose running reach passes `from`, by bisection (reach never decreases): at or
     * before the first whose own pieces do, so what a span reads stays */
    size_t a = t->head, b = t->n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (t->cy[mid].reach <= from) a = mid + 1;
        else b = mid;
    }
    t->head = a;
    if (t->head == t->n) t->head = t->n = 0;
    size_t live = t->n - t->head, k = live > t->cap / 2 ? t->cap - live + 1 : 1;
    if (t->cap - t->n < k && !make_room((void **)&t->cy, &t->cap, &t->head, &t->n, k, sizeof *t->cy)) return -1;
    return 0;
}

/* Inline in the poll's call: a record a poll. room: the caller knows t->n < t->cap (no call:
 * the poll's fast path saves no register). */
static inline __attribute__((always_inline)) int add_cycle(d9m_spans *m, task_state *t, cycle c, bool room) {
    uint64_t last = check_order(t, &c);
    if (last <= keep_from(m)) {
        t->latest_kept = false;
        return 0;
    }
    if (!room && t->n == t->cap && cycle_room(m, t) != 0) {
        t->latest_kept = false;
        return -1;
    }
    uint64_t prev = t->n ? t->cy[t->n - 1].reach : 0;
    c.reach = last > prev ? last : prev;
    t->cy[t->n++] = c;
    t->latest_kept = true;
    return 0;
}

/* Its gaps and off-CPU intervals that end by `from` can count in no span any more. */
static inline void prune_subs(task_state *t, uint64_t from) {
    while (t->shead < t->sn && t->sub[t->shead].end <= from) t->shead++;
    if (t->shead == t->sn) {
        t->shead = t->sn = 0;
        t->sub_overlap = false;
    }
}

/* [start, end) nonempty, room made. */
static inline void push_sub(task_state *t, uint64_t start, uint64_t end, uint8_t part, uint32_t stack) {
    uint64_t prev = t->sn ? t->sub[t->sn - 1].reach : 0;
    if (start < prev) t->sub_overlap = true;
    t->sub[t->sn++] = (sub_ival){start, end, end > prev ? end : prev, stack, part};
}

static int add_sub(d9m_spans *m, task_state *t, uint64_t start, uint64_t end, uint8_t part,
                   uint32_t stack) {
    if (end <= start) return 0;
    uint64_t from = keep_from(m);
    prune_subs(t, from);
    if (end <= from) return 0;
    if (t->sn == t->scap && !make_room((void **)&t->sub, &t->scap, &t->shead, &t->sn, 1, sizeof *t->sub)) return -1;
    push_sub(t, start, end, part, stack);
    return 0;
}

/* The first of the task's records that may reach past lo (those before end by lo: clipped to
 * [lo, hi) they are empty), and the same of its gaps and off-CPU intervals. */
static size_t first_cycle(const task_state *t, uint64_t lo) {
    /* from the newest back: a span is short next to the records kept for the oldest open one
     * (they are dropped only when the array is full), and the walk reads those it finds anyway */
    size_t a = t->head, b = t->n;
    while (b > a && t->cy[b - 1].reach > lo) b--;
    return b;
}

static size_t first_sub(const task_state *t, uint64_t lo) {
    size_t a = t->shead, b = t->sn;
    if (a == b || t->sub[a].reach > lo) return a;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (t->sub[mid].reach <= lo) a = mid + 1;
        else b = mid;
    }
    return a;
}

static void see(d9m_spans *m, uint64_t ts) {
    if (ts > m->now) m->now = ts;
}

int d9m_spans_task_wake(d9m_spans *m, d9m_span_task *t, uint64_t ts) {
    see(m, ts);
    if (t) d9m_wake_note(&t->wake, ts);
    return 0;
}

int d9m_spans_wake(d9m_spans *m, uint64_t task, uint64_t ts) {
    see(m, ts);
    if (task == 0) return 0;
    task_state *t = task_get(m, task);
    if (!t) return -1;
    d9m_wake_note(&t->wake, ts);
    return 0;
}

/* One gap over all of the poll: a governed recording's poll, all unknown. */
static inline bool gap_over_all(const d9m_attr_poll *p, uint64_t start, uint64_t end) {
    return p->ngaps == 1 && p->gaps[0].from <= start && p->gaps[0].to >= end && end > start;
}

static inline __attribute__((always_inline)) int task_poll(d9m_spans *m, d9m_span_task *t, uint64_t start,
                                                           uint64_t end, bool unknown, bool room) {
    see(m, start);
    if (!t) return 0;
    uint64_t prev_end = t->wake.last_poll_end;
    bool polled = t->polled;
    d9m_wake_link link;
    uint64_t since = start; /* when it became runnable for this poll */
    if (d9m_wake_poll(&t->wake, start, end, &link)) since = link.runnable_since;
    /* before its first poll the task's state is unknown, but for the wake that led to it */
    uint64_t wait_from = polled && prev_end < since ? prev_end : since;
    if (add_cycle(m, t, (cycle){wait_from, since, start, end, 0, unknown}, room) != 0) return -1;
    t->polled = true;
    t->poll_start = start;
    t->poll_end = end;
    t->last_off_end = start;
    return 0;
}

int d9m_spans_task_poll(d9m_spans *m, d9m_span_task *t, uint64_t start, uint64_t end) {
    return task_poll(m, t, start, end, false, false);
}

static inline __attribute__((always_inline)) int task_poll_attr(d9m_spans *m, d9m_span_task *t, uint64_t start,
                                                                uint64_t end, const d9m_attr_poll *p, uint32_t *gen,
                                                                bool room) {
    *gen = t ? t->gen : 0;
    bool gaps = p && p->ngaps, unknown = gaps && gap_over_all(p, start, end); /* flagged at once */
    if (task_poll(m, t, start, end, unknown, room) != 0) return -1;
    return gaps && !unknown ? d9m_spans_task_poll_gaps(m, t, p) : 0;
}

/* No task, or its records full: room may have to be made. */
static __attribute__((noinline)) int task_poll_attr_full(d9m_spans *m, d9m_span_task *t, uint64_t start, uint64_t end,
                                                         const d9m_attr_poll *p, uint32_t *gen) {
    return task_poll_attr(m, t, start, end, p, gen, false);
}

int d9m_spans_task_poll_attr(d9m_spans *m, d9m_span_task *t, uint64_t start, uint64_t end, const d9m_attr_poll *p,
                             uint32_t *gen) {
    if (__builtin_expect(!t || t->n == t->cap, 0)) return task_poll_attr_full(m, t, start, end, p, gen);
    return task_poll_attr(m, t, start, end, p, gen, true);
}

int d9m_spans_poll(d9m_spans *m, uint64_t task, uint64_t start, uint64_t end) {
    see(m, start);
    if (task == 0) return 0;
    task_state *t = task_get(m, task);
    return t ? d9m_spans_task_poll(m, t, start, end) : -1;
}

void d9m_spans_set_coverage(d9m_spans *m, const d9m_coverage *c) { m->cov = c; }

/* All of the task's latest poll is unknown (when no span can read it, its record is gone). */
static void latest_unknown(task_state *t) {
    if (t->latest_kept) t->cy[t->n - 1].unknown = true;
}

static int task_poll_gap(d9m_spans *m, task_state *t, uint64_t from, uint64_t to) {
    if (from < t->poll_start) from = t->poll_start;
    if (to > t->poll_end) to = t->poll_end;
    if (from == t->poll_start && to == t->poll_end && to > from) { /* a governed recording's usual gap */
        latest_unknown(t);
        return 0;
    }
    return add_sub(m, t, from, to, D9M_PART_UNKNOWN, D9M_SPAN_NO_STACK);
}

int d9m_spans_poll_gap(d9m_spans *m, uint64_t task, uint64_t from, uint64_t to) {
    task_state *t = task ? task_find(m, task) : NULL;
    return t && t->polled ? task_poll_gap(m, t, from, to) : 0;
}

int d9m_spans_task_poll_gaps(d9m_spans *m, d9m_span_task *t, const d9m_attr_poll *p) {
    if (!t || !t->polled) return 0;
    if (gap_over_all(p, t->poll_start, t->poll_end)) { /* a governed recording's poll */
        latest_unknown(t);
        return 0;
    }
    uint64_t from = keep_from(m); /* as add_sub for each, with one pruning and one room check */
    bool pruned = false;
    for (uint32_t i = 0; i < p->ngaps; i++) {
        uint64_t a = p->gaps[i].from > t->poll_start ? p->gaps[i].from : t->poll_start;
        uint64_t b = p->gaps[i].to < t->poll_end ? p->gaps[i].to : t->poll_end;
        if (b <= a) continue;
        if (a == t->poll_start && b == t->poll_end) { /* as task_poll_gap */
            latest_unknown(t);
            continue;
        }
        if (!pruned) {
            prune_subs(t, from);
            pruned = true;
        }
        if (b <= from) continue;
        if (t->sn == t->scap && !make_room((void **)&t->sub, &t->scap, &t->shead, &t->sn, p->ngaps - i, sizeof *t->sub))
            return -1;
        push_sub(t, a, b, D9M_PART_UNKNOWN, D9M_SPAN_NO_STACK);
    }
    return 0;
}

int d9m_spans_poll_gaps(d9m_spans *m, uint64_t task, const d9m_attr_poll *p) {
    return d9m_spans_task_poll_gaps(m, task && p->ngaps ? task_find(m, task) : NULL, p);
}

static int task_poll_off(d9m_spans *m, task_state *t, uint64_t from, uint64_t to, d9m_part part, uint32_t stack) {
    if (!t || !t->polled || from >= t->poll_end || to <= from) return 0;
    if (part == D9M_PART_ON_CPU || part >= D9M_PART_UNKNOWN) part = D9M_PART_BLOCKED_OTHER;
    if (from < t->last_off_end) { /* overlapping intervals of one thread: the poll is unknown */
        if (t->poll_end > t->poll_start) latest_unknown(t);
        return 0;
    }
    if (to > t->poll_end) to = t->poll_end; /* the task's next poll may run on another thread */
    t->last_off_end = to;
    return add_sub(m, t, from, to, (uint8_t)part, part == D9M_PART_BLOCKED_OTHER ? stack : D9M_SPAN_NO_STACK);
}

int d9m_spans_poll_off(d9m_spans *m, uint64_t task, uint64_t from, uint64_t to, d9m_part part,
                       uint32_t stack) {
    return task_poll_off(m, task ? task_find(m, task) : NULL, from, to, part, stack);
}

int d9m_spans_task_poll_off(d9m_spans *m, d9m_span_task *t, uint32_t gen, uint64_t from, uint64_t to,
                            d9m_part part, uint32_t stack) {
    return task_poll_off(m, t && t->gen == gen ? t : NULL, from, to, part, stack);
}

static void task_poll_off_stack(task_state *t, uint32_t stack) {
    if (!t) return;
    for (size_t i = t->sn; i > t->shead; i--) {
        sub_ival *x = &t->sub[i - 1];
        if (x->part == D9M_PART_UNKNOWN) continue;
        if (x->part == D9M_PART_BLOCKED_OTHER && x->stack == D9M_SPAN_NO_STACK) x->stack = stack;
        return;
    }
}

void d9m_spans_poll_off_stack(d9m_spans *m, uint64_t task, uint32_t stack) {
    task_poll_off_stack(task ? task_find(m, task) : NULL, stack);
}

void d9m_spans_task_poll_off_stack(d9m_spans *m, d9m_span_task *t, uint32_t gen, uint32_t stack) {
    (void)m;
    task_poll_off_stack(t && t->gen == gen ? t : NULL, stack);
}

/* Into the scratch, clipped to [lo, hi) (room made by collect_task). */
static inline void push_tmp(d9m_spans *m, int kind, uint64_t s, uint64_t e, uint64_t lo, uint64_t hi, uint64_t task) {
    if (s < lo) s = lo;
    if (e > hi) e = hi;
    if (e <= s) return;
    m->tmp[m->tmp_n++] = (ival_task){s, e, task, (uint8_t)kind};
}

/* A task's intervals inside [lo, hi), its state after its last recorded interval included: room
 * for all of them is made once (three a record, two for its state). */
static bool collect_task(d9m_spans *m, const task_state *t, uint64_t lo, uint64_t hi) {
    if (!t) return true;
    size_t first = first_cycle(t, lo);
    if (!grow((void **)&m->tmp, &m->tmp_cap, m->tmp_n + 3 * (t->n - first) + 2, sizeof *m->tmp)) return false;
    uint64_t id = t->id;
    for (size_t i = first; i < t->n; i++) {
        const cycle *c = &t->cy[i];
        push_tmp(m, K_WAIT, c->wait_from, c->since, lo, hi, id);
        push_tmp(m, K_QUEUED, c->since, c->start, lo, hi, id);
        push_tmp(m, K_POLL, c->start, c->end, lo, hi, id);
    }
    if (d9m_wake_pending(&t->wake)) { /* woken, its poll not started by hi */
        uint64_t since = t->wake.first_wake;
        if (t->polled && t->wake.last_poll_end > since) since = t->wake.last_poll_end;
        if (t->polled) push_tmp(m, K_WAIT, t->wake.last_poll_end, since, lo, hi, id);
        push_tmp(m, K_QUEUED, since, hi, lo, hi, id);
    } else if (t->polled) {
        push_tmp(m, K_WAIT, t->wake.last_poll_end, hi, lo, hi, id);
    }
    return true;
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
 * and <= K_WAIT, in one pass. */
static void unions(const d9m_spans *m, uint64_t len[K_KINDS]) {
    uint64_t cur_s[K_KINDS] = {0}, cur_e[K_KINDS] = {0};
    bool open[K_KINDS] = {false};
    for (int u = 0; u < K_KINDS; u++) len[u] = 0;
    for (size_t i = 0; i < m->tmp_n; i++) {
        const ival_task *v = &m->tmp[i];
        for (int u = v->kind; u < K_KINDS; u++) {
            if (open[u] && v->start <= cur_e[u]) {
                if (v->end > cur_e[u]) cur_e[u] = v->end;
                continue;
            }
            if (open[u]) len[u] += cur_e[u] - cur_s[u];
            open[u] = true;
            cur_s[u] = v->start;
            cur_e[u] = v->end;
        }
    }
    for (int u = 0; u < K_KINDS; u++)
        if (open[u]) len[u] += cur_e[u] - cur_s[u];
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

/* A task's polls inside [lo, hi); with `subs`, its gaps (a sorted union) and off-CPU intervals
 * (sorted) too, into m->gaps and m->offs. */
static bool collect_attr(d9m_spans *m, const task_state *t, uint64_t lo, uint64_t hi, bool subs,
                         d9m_span_interval **polls, size_t *polls_cap, size_t *npolls, size_t *ngaps,
                         size_t *noffs) {
    size_t np = 0, ng = 0, no = 0;
    for (size_t i = first_cycle(t, lo); i < t->n; i++) {
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
    *npolls = np;
    *ngaps = *noffs = 0;
    if (!subs) return true;
    size_t need = t->sn - t->shead + np;
    if (!grow((void **)&m->gaps, &m->gaps_cap, need + 1, sizeof *m->gaps) ||
        !grow((void **)&m->offs, &m->offs_cap, need + 1, sizeof *m->offs))
        return false;
    for (size_t i = first_sub(t, lo); i < t->sn; i++) {
        sub_ival v = t->sub[i];
        if (v.start < lo) v.start = lo;
        if (v.end > hi) v.end = hi;
        if (v.end <= v.start) continue;
        if (v.part == D9M_PART_UNKNOWN) m->gaps[ng++] = v;
        else m->offs[no++] = v;
    }
    for (size_t i = first_cycle(t, lo); i < t->n; i++) { /* a poll all unknown: a gap over it */
        const cycle *v = &t->cy[i];
        uint64_t a = v->start > lo ? v->start : lo, b = v->end < hi ? v->end : hi;
        if (v->unknown && b > a) m->gaps[ng++] = (sub_ival){a, b, b, D9M_SPAN_NO_STACK, D9M_PART_UNKNOWN};
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
    const task_state *t; /* its gaps and off-CPU intervals read in place (t->sub_overlap false:
                            sorted and disjoint), from si; NULL: copied into m->gaps / m->offs */
    size_t si;
    size_t ng, no, gi, oi; /* the gaps and offs in m->gaps / m->offs, and the first that may
                              reach the next piece (pieces come in time order) */
} piece_cursor;

/* [a, b) of a poll of the task whose attribution is in m->gaps / m->offs. */
static bool attribute_piece_copied(d9m_spans *m, piece_cursor *c, uint64_t a, uint64_t b, d9m_parts *out) {
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

/* The same from the task's own sorted, disjoint gaps and off-CPU intervals: no gap overlaps an
 * off-CPU interval, so each piece of them is its part as it is (what the copied path gives). */
static bool attribute_piece_in_place(d9m_spans *m, piece_cursor *c, uint64_t a, uint64_t b, d9m_parts *out) {
    const task_state *t = c->t;
    while (c->si < t->sn && t->sub[c->si].end <= a) c->si++;
    uint64_t unknown = 0, off = 0;
    for (size_t i = c->si; i < t->sn && t->sub[i].start < b; i++) {
        const sub_ival *o = &t->sub[i];
        uint64_t x = o->start > a ? o->start : a, y = o->end < b ? o->end : b;
        if (y <= x) continue;
        if (o->part == D9M_PART_UNKNOWN) {
            unknown += y - x;
            continue;
        }
        out->ns[o->part] += y - x;
        off += y - x;
        if (o->stack != D9M_SPAN_NO_STACK && !add_stack(m, o->stack, y - x)) return false;
    }
    out->ns[D9M_PART_UNKNOWN] += unknown;
    out->ns[D9M_PART_ON_CPU] += (b - a) - unknown - off;
    return true;
}

/* [a, b) of a poll of the cursor's task (copied): gap (unknown), off-CPU (its part), else on CPU. */
static bool attribute_piece(d9m_spans *m, piece_cursor *c, uint64_t a, uint64_t b, d9m_parts *out) {
    return b <= a || attribute_piece_copied(m, c, a, b, out);
}

/* Task t has gaps or off-CPU intervals, or a poll all unknown, that may reach past lo. */
static bool attributed(const task_state *t, uint64_t lo) {
    if (!t) return false;
    if (t->sn > t->shead) return true;
    for (size_t i = first_cycle(t, lo); i < t->n; i++)
        if (t->cy[i].unknown) return true;
    return false;
}

/* A cursor over task t's attribution from lo, copied, sorted and united, its polls into *polls. */
static bool attr_cursor(d9m_spans *m, const task_state *t, uint64_t lo, uint64_t hi, d9m_span_interval **polls,
                        size_t *polls_cap, size_t *npolls, piece_cursor *c) {
    *c = (piece_cursor){0};
    return collect_attr(m, t, lo, hi, true, polls, polls_cap, npolls, &c->ng, &c->no);
}

/* The in-poll part of [lo, hi) by cause: the first task's polls, then the second's where the
 * first is not polled (their union is the in-poll part). The side path of split_walk's, for a
 * task whose polls overlap or whose gaps and off-CPU intervals came out of order: from copies,
 * sorted, united. */
static bool split_polls(d9m_spans *m, const task_state *ta, const task_state *tb, uint64_t lo, uint64_t hi,
                        uint64_t poll_ns, d9m_parts *out) {
    *out = (d9m_parts){{0}};
    m->nstk = 0;
    if (!attributed(ta, lo) && !attributed(tb, lo)) {
        out->ns[D9M_PART_ON_CPU] = poll_ns; /* no gap, no off-CPU interval: the usual poll */
        return true;
    }
    size_t na = 0, nb = 0;
    piece_cursor c;
    if (ta) {
        if (!attr_cursor(m, ta, lo, hi, &m->pa, &m->pa_cap, &na, &c)) return false;
        for (size_t i = 0; i < na; i++)
            if (!attribute_piece(m, &c, m->pa[i].start, m->pa[i].end, out)) return false;
    }
    if (!tb) return true;
    if (!attr_cursor(m, tb, lo, hi, &m->pb, &m->pb_cap, &nb, &c)) return false;
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
static inline __attribute__((always_inline)) uint64_t unknown_until(const d9m_spans *m, uint64_t lo, uint64_t hi) {
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

/* A piece of a task's time inside a span: [s, e) of kind K_POLL, K_QUEUED or K_WAIT. */
typedef struct piece {
    uint64_t s, e;
    int kind;
    bool unknown; /* a poll all unknown (cycle.unknown) */
} piece;

/* [a, b) of a poll of the cursor's task by cause (its record's unknown flag), its gaps and off-CPU
 * intervals read in place (found from lo at the first piece that needs them). */
static inline bool attribute_walked(d9m_spans *m, piece_cursor *c, bool unknown, uint64_t lo, uint64_t a,
                                    uint64_t b, d9m_parts *out) {
    if (unknown) {
        out->ns[D9M_PART_UNKNOWN] += b - a;
        return true;
    }
    if (c->t->sn == c->t->shead) { /* no gap, no off-CPU interval: the usual poll */
        out->ns[D9M_PART_ON_CPU] += b - a;
        return true;
    }
    if (c->si == SIZE_MAX) c->si = first_sub(c->t, lo);
    return attribute_piece_in_place(m, c, a, b, out);
}

/* Where a task's pieces go: kept (out, for the merge of two tasks), or summed as they come (one
 * task: its pieces are disjoint, each kind's part is their sum), the poll pieces split by cause
 * on the way when attr is set. */
typedef struct piece_sink {
    piece *out;
    size_t n;
    uint64_t lo, hi;
    uint64_t *len;
    d9m_parts *attr;
    d9m_spans *m;
    piece_cursor *c;
    bool failed;
} piece_sink;

static inline __attribute__((always_inline)) void put_piece(piece_sink *k, uint64_t s, uint64_t e, int kind,
                                                            bool unknown) {
    if (s < k->lo) s = k->lo;
    if (e > k->hi) e = k->hi;
    if (k->out) {
        k->out[k->n] = (piece){s, e, kind, unknown};
        k->n += e > s; /* an empty one is overwritten by the next */
        return;
    }
    if (e <= s) return;
    k->len[kind] += e - s;
    if (kind == K_POLL && k->attr && !attribute_walked(k->m, k->c, unknown, k->lo, s, e, k->attr)) k->failed = true;
}

/* Task t's pieces inside [lo, hi) from its record `first` on (into k->out: room for 3 a record,
 * and 2): its records' wait, queued and poll pieces, then its state after them (as
 * collect_task pushes them), clipped, the empty ones left out. In time order and disjoint unless
 * the task's polls overlap (task_state.overlap_end). */
static inline __attribute__((always_inline)) void task_pieces(const task_state *t, size_t first, piece_sink *k) {
    for (size_t i = first; i < t->n; i++) {
        const cycle *c = &t->cy[i];
        put_piece(k, c->wait_from, c->since, K_WAIT, false);
        put_piece(k, c->since, c->start, K_QUEUED, false);
        put_piece(k, c->start, c->end, K_POLL, c->unknown);
    }
    uint64_t lpe = t->wake.last_poll_end;
    if (d9m_wake_pending(&t->wake)) { /* woken, its poll not started by hi */
        uint64_t since = t->polled && lpe > t->wake.first_wake ? lpe : t->wake.first_wake;
        if (t->polled) put_piece(k, lpe, since, K_WAIT, false);
        put_piece(k, since, k->hi, K_QUEUED, false);
    } else if (t->polled) {
        put_piece(k, lpe, k->hi, K_WAIT, false);
    }
}

/* The pieces of task t into the scratch from index at; false when out of memory. */
static inline __attribute__((always_inline)) bool pieces_of(d9m_spans *m, const task_state *t, uint64_t lo, uint64_t hi, size_t at, size_t *n) {
    size_t first = first_cycle(t, lo), need = at + 3 * (t->n - first) + 2;
    if (need > m->pcs_cap && !grow((void **)&m->pcs, &m->pcs_cap, need, sizeof *m->pcs)) return false;
    piece_sink k = {.out = m->pcs + at, .lo = lo, .hi = hi};
    task_pieces(t, first, &k);
    *n = k.n;
    return true;
}

/* The split of [lo, hi) over its first task ta and its second tb (either may be NULL) in one walk
 * over their pieces, each task's in time order and disjoint: at each instant the lowest kind of
 * the two (poll, then queued, then wait) counts, as the union of each kind's intervals gives it.
 * With attr, the in-poll instants are split by cause on the way (the poll of ta where ta is
 * polled, else tb's), from the tasks' gaps and off-CPU intervals read in place (both tasks' in
 * time order and disjoint). False when out of memory. */
static bool split_walk(d9m_spans *m, const task_state *ta, const task_state *tb, uint64_t lo, uint64_t hi,
                       uint64_t len[K_KINDS], d9m_parts *attr) {
    if (!ta) ta = tb, tb = NULL; /* no first task: the second is all */
    if (!ta) return true;
    piece_cursor ca = {.t = ta, .si = SIZE_MAX}, cb = {.t = tb, .si = SIZE_MAX};
    if (!tb) { /* one task: its pieces summed as they come */
        piece_sink k = {.lo = lo, .hi = hi, .len = len, .attr = attr, .m = m, .c = &ca};
        task_pieces(ta, first_cycle(ta, lo), &k);
        return !k.failed;
    }
    size_t na, nb;
    if (!pieces_of(m, ta, lo, hi, 0, &na) || !pieces_of(m, tb, lo, hi, na, &nb)) return false;
    const piece *pa = m->pcs, *pb = m->pcs + na;
    size_t i = 0, j = 0;
    uint64_t x = lo;
    while (i < na || j < nb) {
        if (i < na && pa[i].e <= x) {
            i++;
            continue;
        }
        if (j < nb && pb[j].e <= x) {
            j++;
            continue;
        }
        uint64_t y = UINT64_MAX;
        int ka = K_KINDS, kb = K_KINDS;
        if (i < na) {
            if (pa[i].s <= x) ka = pa[i].kind, y = pa[i].e;
            else y = pa[i].s;
        }
        if (j < nb) {
            if (pb[j].s <= x) kb = pb[j].kind, y = pb[j].e < y ? pb[j].e : y;
            else y = pb[j].s < y ? pb[j].s : y;
        }
        int k = ka < kb ? ka : kb;
        if (k < K_KINDS) {
            len[k] += y - x;
            if (k == K_POLL && attr &&
                !(ka == K_POLL ? attribute_walked(m, &ca, pa[i].unknown, lo, x, y, attr)
                               : attribute_walked(m, &cb, pb[j].unknown, lo, x, y, attr)))
                return false;
        }
        x = y;
    }
    return true;
}

/* The general split, for tasks whose polls overlap: their intervals collected, sorted and
 * united; len gets each kind's part (what its union adds to the kinds before it). */
static int split_union(d9m_spans *m, const task_state *ta, const task_state *tb, uint64_t lo, uint64_t hi,
                       uint64_t len[K_KINDS]) {
    m->tmp_n = 0;
    if (!collect_task(m, ta, lo, hi) || !collect_task(m, tb, lo, hi)) return -1;
    if (m->tmp_n > 64) qsort(m->tmp, m->tmp_n, sizeof *m->tmp, cmp_start);
    else sort_by_start(m->tmp, m->tmp_n);
    uint64_t u[K_KINDS];
    unions(m, u);
    len[K_POLL] = u[K_POLL];
    len[K_QUEUED] = u[K_QUEUED] - u[K_POLL];
    len[K_WAIT] = u[K_WAIT] - u[K_QUEUED];
    return 0;
}

static bool subs_in_place(const task_state *t) { return !t || !t->sub_overlap; }

/* A split span to its reader: its parts from the kinds' lengths (the rest of elapsed unknown),
 * the stacks of its polls' longest off-CPU intervals for the time of the call. */
static inline __attribute__((always_inline)) void deliver(d9m_spans *m, d9m_span *s, const uint64_t *len,
                                                          uint64_t elapsed) {
    s->parts = (d9m_span_parts){.poll_ns = len[K_POLL], .queued_ns = len[K_QUEUED], .wait_ns = len[K_WAIT],
                                .unknown_ns = elapsed - len[K_POLL] - len[K_QUEUED] - len[K_WAIT]};
    s->poll_stacks = m->stk;
    s->npoll_stacks = m->nstk;
    if (m->done) m->done(m->ctx, s);
    s->poll_stacks = NULL;
    s->npoll_stacks = 0;
}

/* Split s over its tasks and report it; begin_t: its begin task's state when the span began
 * (NULL: looked up by id now), end_t its end task's. */
static int report(d9m_spans *m, d9m_span *s, const task_state *begin_t, const task_state *end_t) {
    uint64_t lo = s->begin_ts, hi = s->end_ts > s->begin_ts ? s->end_ts : s->begin_ts;
    uint64_t elapsed = hi - lo;
    lo = unknown_until(m, lo, hi); /* [begin, lo) unknown */
    /* the span's tasks, looked up once */
    const task_state *tbegin = !s->begin_task ? NULL : begin_t ? begin_t : task_find(m, s->begin_task);
    const task_state *tend = !s->end_task ? NULL : end_t ? end_t : task_find(m, s->end_task);
    /* one task: the same state at both ends (an id the reader saw again after its task's
     * termination is another task: then two). The first is the task it began in, else the one
     * it ended in; the second, the one it ended in when another. */
    bool one = !s->begin_task || !s->end_task || tend == tbegin;
    const task_state *ta = s->begin_task ? tbegin : tend, *tb = one ? NULL : tend;
    uint64_t len[K_KINDS] = {0};
    bool walk = (!ta || ta->overlap_end <= lo) && (!tb || tb->overlap_end <= lo);
    bool attr_in_walk = walk && subs_in_place(ta) && subs_in_place(tb);
    s->poll_parts = (d9m_parts){{0}};
    m->nstk = 0;
    if (walk ? !split_walk(m, ta, tb, lo, hi, len, attr_in_walk ? &s->poll_parts : NULL)
             : split_union(m, ta, tb, lo, hi, len) != 0)
        return -1;
    if (!attr_in_walk && !split_polls(m, ta, tb, lo, hi, len[K_POLL], &s->poll_parts)) return -1;
    deliver(m, s, len, elapsed);
    return 0;
}

/* report() for the usual span, inline in the end's call: one task (the same state at both ends,
 * or one end outside any poll), its polls in order and its gaps and off-CPU intervals in place,
 * split in one walk; anything else goes to report(). */
static inline __attribute__((always_inline)) int report_ended(d9m_spans *m, d9m_span *s, const task_state *begin_t,
                                                              const task_state *end_t) {
    const task_state *t = s->begin_task ? (s->end_task && end_t != begin_t ? NULL : begin_t)
                                        : s->end_task ? end_t : NULL;
    uint64_t lo = s->begin_ts, hi = s->end_ts;
    if (!t || hi < lo) return report(m, s, begin_t, end_t);
    uint64_t elapsed = hi - lo;
    lo = unknown_until(m, lo, hi); /* [begin, lo) unknown */
    if (t->overlap_end > lo || t->sub_overlap) return report(m, s, begin_t, end_t);
    uint64_t len[K_KINDS] = {0};
    s->poll_parts = (d9m_parts){{0}};
    m->nstk = 0;
    piece_cursor c = {.t = t, .si = SIZE_MAX};
    piece_sink k = {.lo = lo, .hi = hi, .len = len, .attr = &s->poll_parts, .m = m, .c = &c};
    task_pieces(t, first_cycle(t, lo), &k);
    if (k.failed) return -1;
    deliver(m, s, len, elapsed);
    return 0;
}

/* No span can read t any more: its state goes to the free ones, its arrays kept. */
static void forget_task(d9m_spans *m, task_state *t) {
    if (t->in_index) d9_u64_map_remove(&m->task_index, t->id);
    if (m->hit == t) m->hit = NULL;
    t->gen++;
    t->next_free = m->free_tasks;
    m->free_tasks = t;
    m->ntasks--;
}

static void forget_dead(d9m_spans *m) {
    for (size_t i = 0; i < m->ndead; i++) forget_task(m, m->dead[i]);
    m->ndead = 0;
}

int d9m_spans_task_terminate(d9m_spans *m, d9m_span_task *t) {
    if (!t || t->dead) return 0;
    if (m->nopen == 0) {
        forget_task(m, t);
        return 0;
    }
    if (!grow((void **)&m->dead, &m->cap_dead, m->ndead + 1, sizeof *m->dead)) return -1;
    t->dead = true;
    m->dead[m->ndead++] = t;
    return 0;
}

int d9m_spans_terminate(d9m_spans *m, uint64_t task) {
    return d9m_spans_task_terminate(m, task_find(m, task));
}

/* Id's entry in the direct-mapped table, and whether it holds id's chain. */
static inline uint32_t *id_entry(d9m_spans *m, uint64_t id) { return &m->id_table[id & (ID_TABLE - 1)]; }

static inline bool holds(const d9m_spans *m, uint32_t head, uint64_t id) {
    return head && m->open[head - 1].s.id == id;
}

/* Unlink open span `idx` from its id's chain (or it is the unindexed one). */
static inline __attribute__((always_inline)) void close_slot(d9m_spans *m, uint32_t idx) {
    if (m->unindexed == idx + 1) {
        m->unindexed = 0;
    } else {
        uint64_t id = m->open[idx].s.id;
        uint32_t *e = id_entry(m, id), *dm_head = holds(m, *e, id) ? e : NULL;
        uint64_t *head = dm_head ? NULL : d9_u64_map_get(&m->open_by_id, id);
        uint32_t first = dm_head ? *dm_head : head ? (uint32_t)*head : 0;
        if (first == idx + 1) {
            if (dm_head) *dm_head = m->open[idx].next;
            else if (m->open[idx].next) *head = m->open[idx].next;
            else d9_u64_map_remove(&m->open_by_id, id);
        } else if (first) {
            for (uint32_t j = first - 1;; j = m->open[j].next - 1) {
                if (m->open[j].next == idx + 1) {
                    m->open[j].next = m->open[idx].next;
                    break;
                }
                if (!m->open[j].next) break;
            }
        }
    }
    m->open[idx].used = false;
    m->open[idx].gen++;
    m->open[idx].next = m->free_head;
    m->free_head = idx + 1;
    if (--m->nopen == 0) {
        forget_dead(m);
        m->bq_head = m->bq_n = 0;
    }
}

/* The newest open span of (name, id): the unindexed one is the newest of all. */
static inline __attribute__((always_inline)) int64_t find_open(d9m_spans *m, uint32_t name, uint64_t id) {
    if (m->unindexed) {
        const d9m_span *u = &m->open[m->unindexed - 1].s;
        if (u->id == id && u->name == name) return (int64_t)m->unindexed - 1;
    }
    uint32_t j = *id_entry(m, id);
    if (!holds(m, j, id)) {
        uint64_t *head = m->open_by_id.count ? d9_u64_map_get(&m->open_by_id, id) : NULL;
        j = head ? (uint32_t)*head : 0;
    }
    for (; j; j = m->open[j - 1].next)
        if (m->open[j - 1].s.name == name) return (int64_t)j - 1;
    return -1;
}

/* Open span idx at the head of its id's chain (it is the newest of its id): in the table when
 * its entry holds the chain or is free and the map has none, else in the map. 0, or -1 when
 * out of memory. */
static __attribute__((noinline)) int index_open_slow(d9m_spans *m, uint32_t idx) {
    uint64_t id = m->open[idx].s.id;
    uint32_t *e = id_entry(m, id);
    uint64_t *head = NULL;
    if (!holds(m, *e, id) && m->open_by_id.count) head = d9_u64_map_get(&m->open_by_id, id);
    if (!head && *e && !holds(m, *e, id) && !(head = d9_u64_map_upsert(&m->open_by_id, id, 0))) return -1;
    if (head) {
        m->open[idx].next = (uint32_t)*head;
        *head = idx + 1;
    } else {
        m->open[idx].next = *e;
        *e = idx + 1;
    }
    return 0;
}

/* Inline: its entry free, while no id is in the map (most ids: a server's requests numbered in
 * turn), it goes at the head of the table's chain. */
static inline __attribute__((always_inline)) int index_open(d9m_spans *m, uint32_t idx) {
    uint32_t *e = id_entry(m, m->open[idx].s.id);
    if (__builtin_expect(!*e && !m->open_by_id.count, 1)) {
        m->open[idx].next = 0;
        *e = idx + 1;
        return 0;
    }
    return index_open_slow(m, idx);
}

/* begin_t: the state of task, when the reader holds it; by_id: looked up here instead (after
 * a reopened span's close, which may forget it; NULL: not known yet, looked up at the end). */
static inline __attribute__((always_inline)) int begin(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                                                       task_state *begin_t, bool by_id, uint64_t worker, uint64_t tid) {
    see(m, ts);
    int64_t prev = find_open(m, name, id);
    if (prev >= 0) { /* its end never came: reported unended, up to this begin */
        m->reopened++;
        d9m_span s = m->open[prev].s;
        task_state *t = m->open[prev].begin_t;
        uint32_t gen = t ? t->gen : 0;
        close_slot(m, (uint32_t)prev);
        if (t && t->gen != gen) t = NULL; /* forgotten as the last open span closed: not found */
        s.end_ts = ts;
        if (report(m, &s, t, NULL) != 0) return -1;
    }
    if (by_id && task) begin_t = task_find(m, task);
    if (m->unindexed) { /* the newest open span so far goes into the index */
        if (index_open(m, m->unindexed - 1) != 0) return -1;
        m->unindexed = 0;
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
    /* what report() does not set (its parts, intervals and stacks it does) */
    open_span *o = &m->open[idx];
    o->s.name = name;
    o->s.id = id;
    o->s.begin_ts = ts;
    o->s.end_ts = 0;
    o->s.begin_task = task;
    o->s.end_task = 0;
    o->s.begin_worker = worker;
    o->s.end_worker = 0;
    o->s.begin_tid = tid;
    o->s.end_tid = 0;
    o->s.ended = false;
    o->begin_t = begin_t;
    o->next = 0;
    o->used = true;
    if (queue_begin(m, ts, idx) != 0) {
        m->open[idx].used = false;
        m->open[idx].next = m->free_head;
        m->free_head = idx + 1;
        return -1;
    }
    m->unindexed = idx + 1;
    if (m->nopen++ == 0 || ts < m->open_floor) m->open_floor = ts;
    return 0;
}

int d9m_spans_begin(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                    uint64_t worker, uint64_t tid) {
    return begin(m, ts, name, id, task, NULL, true, worker, tid);
}

int d9m_spans_task_begin(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task_id,
                         d9m_span_task *t, uint64_t worker, uint64_t tid) {
    return begin(m, ts, name, id, task_id, t, false, worker, tid);
}

static inline __attribute__((always_inline)) int end(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                                                     const task_state *end_t, uint64_t worker, uint64_t tid) {
    see(m, ts);
    int64_t idx = find_open(m, name, id);
    if (idx < 0) {
        m->stray_ends++;
        return 0;
    }
    d9m_span *s = &m->open[idx].s; /* reported from its slot (no copy), which closes after */
    s->end_ts = ts;
    s->end_task = task;
    s->end_worker = worker;
    s->end_tid = tid;
    s->ended = true;
    int rc = report_ended(m, s, m->open[idx].begin_t, end_t); /* before closing: its intervals are still kept */
    close_slot(m, (uint32_t)idx);
    return rc;
}

int d9m_spans_end(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                  uint64_t worker, uint64_t tid) {
    return end(m, ts, name, id, task, NULL, worker, tid);
}

int d9m_spans_task_end(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task_id,
                       d9m_span_task *t, uint64_t worker, uint64_t tid) {
    return end(m, ts, name, id, task_id, t, worker, tid);
}

static int cmp_begin(const void *a, const void *b) {
    const open_span *x = a, *y = b;
    return x->s.begin_ts < y->s.begin_ts ? -1 : x->s.begin_ts > y->s.begin_ts ? 1 : 0;
}

int d9m_spans_finish(d9m_spans *m, uint64_t end_ts) {
    see(m, end_ts);
    if (m->nopen == 0) return 0;
    open_span *left = malloc(m->nopen * sizeof *left);
    if (!left) return -1;
    size_t n = 0;
    for (size_t i = 0; i < m->nopen_slots; i++)
        if (m->open[i].used) left[n++] = m->open[i];
    qsort(left, n, sizeof *left, cmp_begin); /* a stable order for the readers */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        left[i].s.end_ts = end_ts;
        left[i].s.ended = false;
        rc = report(m, &left[i].s, left[i].begin_t, NULL);
    }
    free(left);
    for (size_t i = 0; i < m->nopen_slots; i++)
        if (m->open[i].used) close_slot(m, (uint32_t)i);
    return rc;
}
