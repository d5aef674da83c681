/* Records in time order -> statistics: poll durations (overall, per worker, per location,
 * the longest with the samples inside them), wake-to-poll delays, task migration and
 * lifecycle, samples classified as inside a poll / while parked / elsewhere, off-CPU time
 * inside polls, and queued work while a worker was parked. Each worker's latest poll and park
 * are enough to place a sample or a queue observation, because records arrive in time order. */
#include <stdlib.h>
#include <string.h>

#include "analysis/attribution_sweep.h"
#include "analysis/internal.h"
#include "analysis/span_sweep.h"

task *d9a_task_lookup(d9a_analysis *a, uint64_t id, bool create) {
    uint64_t *i = d9_u64_map_get(&a->task_index, id);
    if (i) {
        a->task_hit = (uint32_t)*i + 1;
        return &a->tasks[*i];
    }
    if (!create) return NULL;
    uint32_t idx;
    if (a->free_task != D9A_NO_ID) {
        idx = a->free_task;
        a->free_task = a->tasks[idx].next_free;
    } else {
        if (a->ntasks == a->tasks_cap) {
            uint32_t cap = a->tasks_cap ? a->tasks_cap * 2 : 256;
            task *p = realloc(a->tasks, (size_t)cap * sizeof *p);
            if (!p) {
                a->failed = true;
                return NULL;
            }
            a->tasks = p;
            a->tasks_cap = cap;
        }
        idx = a->ntasks++;
    }
    if (d9_u64_map_put(&a->task_index, id, idx) != 0) {
        a->failed = true;
        return NULL;
    }
    task *t = &a->tasks[idx];
    *t = (task){.id = id, .loc = D9A_NO_ID, .last_worker = UINT16_MAX, .in_use = true,
              .next_free = D9A_NO_ID};
    a->task_hit = idx + 1;
    return t;
}

/* The task terminated: its span state goes back to the model, which keeps it while a span
 * that may read it is open. */
static void task_release(d9a_analysis *a, task *t) {
    uint32_t idx = (uint32_t)(t - a->tasks);
    if (t->span && d9m_spans_task_terminate(a->spans.model, t->span) != 0) a->spans.failed = true;
    d9_u64_map_remove(&a->task_index, t->id);
    t->in_use = false;
    t->next_free = a->free_task;
    a->free_task = idx;
}

loc_stats *d9a_loc_grow(d9a_analysis *a, uint32_t loc) {
    if (loc >= a->locs_cap) {
        uint32_t cap = a->locs_cap ? a->locs_cap : 64;
        while (cap <= loc) cap *= 2;
        loc_stats *p = realloc(a->locs, (size_t)cap * sizeof *p);
        if (!p) {
            a->failed = true;
            return NULL;
        }
        memset(p + a->locs_cap, 0, (size_t)(cap - a->locs_cap) * sizeof *p);
        a->locs = p;
        a->locs_cap = cap;
    }
    return &a->locs[loc];
}

static stack_stats *stk(d9a_analysis *a, uint32_t id) {
    if (id >= a->stk_cap) {
        uint32_t cap = a->stk_cap ? a->stk_cap : 64;
        while (cap <= id) cap *= 2;
        stack_stats *p = realloc(a->stk, (size_t)cap * sizeof *p);
        if (!p) {
            a->failed = true;
            return NULL;
        }
        memset(p + a->stk_cap, 0, (size_t)(cap - a->stk_cap) * sizeof *p);
        for (uint32_t i = a->stk_cap; i < cap; i++) p[i].example_loc = D9A_NO_ID;
        a->stk = p;
        a->stk_cap = cap;
    }
    return &a->stk[id];
}

static worker *rec_worker(d9a_analysis *a, uint16_t id) {
    return id < a->workers_cap ? a->workers[id] : NULL;
}

/* Another worker than `self` that was parked at ts and stayed parked for D9A_IDLE_MIN_NS
 * more (a shorter park is a wake-up already under way), or NULL. */
static worker *parked_at(d9a_analysis *a, uint64_t ts, const worker *self) {
    for (size_t i = 0; i < a->nwlist; i++) {
        worker *x = a->wlist[i];
        if (x != self && x->sw_has_park && x->sw_park_start <= ts &&
            ts + D9A_IDLE_MIN_NS < x->sw_park_end)
            return x;
    }
    return NULL;
}

/* The long-poll entry of the worker's current poll, if it is being kept. */
static long_poll_entry *tracked_poll(d9a_analysis *a, const worker *w) {
    if (w->sw_poll_slot < 0 || a->long_polls.gen[w->sw_poll_slot] != w->sw_poll_gen) return NULL;
    return d9a_topn_at(&a->long_polls, (size_t)w->sw_poll_slot);
}

static void live_add(d9a_analysis *a, uint64_t ts, int64_t delta) {
    uint64_t t = ts > a->live_origin ? ts - a->live_origin : 0;
    uint64_t slot = t / a->live_slot_ns;
    while (slot >= D9A_LIVE_SLOTS) { /* halve the resolution: merge neighbours */
        for (size_t i = 0; i < D9A_LIVE_SLOTS / 2; i++)
            a->live_delta[i] = a->live_delta[2 * i] + a->live_delta[2 * i + 1];
        memset(a->live_delta + D9A_LIVE_SLOTS / 2, 0,
               D9A_LIVE_SLOTS / 2 * sizeof a->live_delta[0]);
        a->live_slot_ns *= 2;
        slot = t / a->live_slot_ns;
    }
    a->live_delta[slot] += delta;
    if (ts > a->live_last_ts) a->live_last_ts = ts;
}

/* Close the worker's pending off-CPU sample: it was off-CPU from its timestamp until `next`
 * (the worker's next sample) or the end of its poll, whichever came first. */
static void close_pending(d9a_analysis *a, worker *w, uint64_t next) {
    if (!w->pend_off) return;
    w->pend_off = false;
    uint64_t end = next < w->pend_poll_end ? next : w->pend_poll_end;
    if (w->pend_off_end < end) end = w->pend_off_end; /* exact, from SchedSwitchEvent */
    uint64_t t = end > w->pend_ts ? end - w->pend_ts : 0;
    w->off_est_ns += t;
    if (w->pend_stack < a->stk_cap) {
        a->stk[w->pend_stack].off_in_poll_ns += t;
        if (t > a->stk[w->pend_stack].off_in_poll_max_ns) a->stk[w->pend_stack].off_in_poll_max_ns = t;
    }
    if (w->pend_slot < 0 || a->long_polls.gen[w->pend_slot] != w->pend_gen) return;
    long_poll_entry *e = d9a_topn_at(&a->long_polls, (size_t)w->pend_slot);
    for (uint32_t i = 0; i < e->ngroups; i++)
        if (e->groups[i].stack == w->pend_stack && e->groups[i].source == 1) {
            e->groups[i].est_ns += t;
            return;
        }
}

/* A late record (older than what was already handed on) still counts in durations and
 * totals, but does not move a worker's current poll or park back in time, and takes no part in
 * pairing wakes with polls or in migrations: those would pair across the gap. */
static void on_poll(d9a_analysis *a, const d9a_rec *r, bool late, task *known) {
    worker *w = rec_worker(a, r->worker);
    loc_stats *L = d9a_loc(a, r->ref);
    if (!w || !L) {
        uint32_t gen;
        if (!late && a->spans.model) d9a_spans_poll_feed(a, r, NULL, &gen); /* else at its attribution */
        return;
    }
    if (!late) close_pending(a, w, r->ts);
    w->polls++;
    w->poll_ns += r->dur;
    d9a_hist_add(&a->polls, r->dur);
    d9a_hist_add(&L->polls, r->dur);
    if (r->dur > a->opt.long_poll_warn_ns) {
        a->polls_over_warn++;
        L->polls_over_warn++;
    }
    if (r->dur > a->opt.long_poll_crit_ns) a->polls_over_crit++;

    bool replaced;
    long slot = d9a_topn_place(&a->long_polls, r->dur, &replaced);
    if (slot >= 0) {
        long_poll_entry *e = d9a_topn_at(&a->long_polls, (size_t)slot);
        memset(e, 0, sizeof *e);
        e->start = r->ts;
        e->dur = r->dur;
        e->task = r->id;
        e->loc = r->ref;
        e->worker = r->worker;
        e->lq = r->aux;
    }
    if (late) {
        d9a_attr_late_poll(a, r, slot);
        /* a pending wake older than this poll: it was followed by this poll at the latest */
        task *t = d9a_task(a, r->id, false);
        d9m_wake_link link;
        if (t && d9m_wake_poll(&t->wake, r->ts, r->ts + r->dur, &link))
            d9a_hist_add(&a->wake_delay, link.delay_ns);
        return;
    }
    d9a_attr_poll_begin(a, w, r, slot);
    w->sw_poll_slot = slot;
    if (slot >= 0) w->sw_poll_gen = a->long_polls.gen[slot];
    w->sw_has_poll = true;
    w->sw_poll_start = r->ts;
    w->sw_poll_end = r->ts + r->dur;
    w->sw_poll_loc = r->ref;

    if (r->aux > 0) {
        w->polls_with_queue++;
        a->polls_with_queue++;
        if (r->aux > w->max_lq) w->max_lq = r->aux;
        worker *x = parked_at(a, r->ts, w);
        if (x) {
            w->polls_with_queue_while_parked++;
            a->polls_with_queue_while_parked++;
            long s = d9a_topn_place(&a->queued_top, r->aux, NULL);
            if (s >= 0)
                *(queued_entry *)d9a_topn_at(&a->queued_top, (size_t)s) =
                    (queued_entry){r->ts, r->worker, (uint16_t)x->id, r->aux};
        }
    }

    task *t = known ? known : d9a_task(a, r->id, true);
    if (!t) return;
    d9m_wake_link link;
    if (d9m_wake_poll(&t->wake, r->ts, r->ts + r->dur, &link)) {
        uint64_t d = link.delay_ns;
        d9a_hist_add(&a->wake_delay, d);
        if (d > a->opt.wake_delay_warn_ns) a->wake_over_warn++;
        if (d > a->opt.wake_delay_crit_ns) a->wake_over_crit++;
        long s = d9a_topn_place(&a->wake_top, d, NULL);
        if (s >= 0)
            *(wake_entry *)d9a_topn_at(&a->wake_top, (size_t)s) =
                (wake_entry){link.runnable_since, r->ts, r->id, r->ref, link.wakes, r->worker};
    }
    if (t->polls == 0) {
        a->tasks_polled++;
    } else {
        a->migration_polls++;
        if (t->last_worker != r->worker) {
            if (t->hops++ == 0) a->tasks_migrated++;
            a->migrations++;
        }
    }
    t->polls++;
    t->last_worker = r->worker;
    if (t->loc == D9A_NO_ID) t->loc = r->ref;
}

static void on_sample(d9a_analysis *a, const d9a_rec *r) {
    stack_stats *S = stk(a, r->ref);
    if (!S) return;
    worker *w = rec_worker(a, r->worker);
    if (w) close_pending(a, w, r->ts);
    if (w && r->aux) d9a_attr_sample(a, w, r);
    bool in_poll = w && w->sw_has_poll && r->ts >= w->sw_poll_start && r->ts < w->sw_poll_end;
    bool parked = !in_poll && w && w->sw_has_park && r->ts >= w->sw_park_start &&
                  r->ts < w->sw_park_end;
    bool cpu = r->aux == 0;
    if (cpu) {
        a->cpu_total++;
        S->cpu++;
        if (in_poll) {
            S->cpu_in_poll++;
            a->cpu_in_poll++;
            w->cpu_in_poll++;
        } else if (parked) {
            S->cpu_parked++;
        }
    } else {
        a->off_total++;
        S->off++;
        if (in_poll) {
            S->off_in_poll++;
            a->off_in_poll++;
            w->off_in_poll++;
            S->example_loc = w->sw_poll_loc;
            w->pend_off = true;
            w->pend_ts = r->ts;
            w->pend_poll_end = w->sw_poll_end;
            w->pend_stack = r->ref;
            w->pend_off_end = w->sw_has_off && w->sw_off_start <= r->ts && r->ts < w->sw_off_end
                                  ? w->sw_off_end
                                  : UINT64_MAX;
            w->pend_slot = w->sw_poll_slot;
            w->pend_gen = w->sw_poll_gen;
        } else if (parked) {
            S->off_parked++;
            a->off_parked++;
        }
    }
    long_poll_entry *e = in_poll ? tracked_poll(a, w) : NULL;
    if (!e) return;
    if (cpu) e->cpu++;
    else e->off++;
    for (uint32_t i = 0; i < e->ngroups; i++)
        if (e->groups[i].stack == r->ref && e->groups[i].source == r->aux) {
            e->groups[i].count++;
            return;
        }
    if (e->ngroups < D9A_POLL_GROUPS) e->groups[e->ngroups++] = (poll_group){r->ref, r->aux, 1, 0};
}

static void on_offcpu(d9a_analysis *a, const d9a_rec *r, bool late) {
    worker *w = rec_worker(a, r->worker);
    if (!w || late) return;
    if (r->aux >= D9A_POLL_CPU_EXACT) {
        d9a_attr_poll_cpu(w, r);
        return;
    }
    /* the stack of the context-switch sample taken just before this switch-out, if one was
     * (model/switch_stack_match.h: the rule the export and the viewer follow too) */
    uint32_t stack = d9m_switch_match_interval(&w->sw_match, r->ts, r->ts + r->dur);
    d9a_attr_offcpu(a, w, r, stack == D9M_SWITCH_NO_SAMPLE ? D9A_NO_ID : stack);
    w->sw_has_off = true;
    w->sw_off_start = r->ts;
    w->sw_off_end = r->ts + r->dur;
    /* the switch-out a context-switch sample was taken at (recorded a few us after it): the
     * sample's off-CPU time is then known exactly */
    if (w->pend_off && w->pend_off_end == UINT64_MAX && r->ts >= w->pend_ts &&
        r->ts - w->pend_ts <= D9A_SWITCH_MATCH_NS)
        w->pend_off_end = r->ts + r->dur;
    if (!w->sw_has_poll || r->ts < w->sw_poll_start || r->ts >= w->sw_poll_end) return;
    uint64_t end = r->ts + r->dur < w->sw_poll_end ? r->ts + r->dur : w->sw_poll_end;
    uint64_t overlap = end - r->ts;
    w->offcpu_in_poll_ns += overlap;
    if (r->aux) w->preempted_in_poll_ns += overlap;
    long_poll_entry *e = tracked_poll(a, w);
    if (e) {
        e->offcpu_ns += overlap;
        if (r->aux) e->preempted_ns += overlap;
    }
}

static void finish_task(d9a_analysis *a, task *t) {
    if (d9m_wake_pending(&t->wake)) a->wakes_unpolled++;
    if (t->hops > 0) {
        long s = d9a_topn_place(&a->migr_top, t->hops, NULL);
        if (s >= 0)
            *(migr_entry *)d9a_topn_at(&a->migr_top, (size_t)s) =
                (migr_entry){t->id, t->loc, t->polls, t->hops};
    }
}

/* A record or mark at ts is handed on: whether it is late (older than one handed on before). */
static inline bool hand_on(d9a_analysis *a, uint64_t ts) {
    bool late = a->swept_any && ts < a->watermark;
    if (late) a->late++;
    else a->watermark = ts;
    a->swept_any = true;
    return late;
}

static void sweep_one(d9a_analysis *a, const d9a_rec *r) {
    bool late = hand_on(a, r->ts);
    /* the span model takes what it needs where the sweep has it (before the sweep's own
     * step: the poll's attribution is fed to it from on_poll); no call for the other kinds */
    bool spans = !late && a->spans.model;
    switch (r->kind) {
    case D9A_REC_POLL:
        /* the span model's task is the sweep's (nothing makes tasks in between) */
        on_poll(a, r, late, spans ? d9a_spans_poll(a, r) : NULL);
        break;
    case D9A_REC_PARK: {
        worker *w = rec_worker(a, r->worker);
        if (!w) break;
        w->parks++;
        w->park_ns += r->dur;
        if (late) break;
        w->sw_has_park = true;
        w->sw_park_start = r->ts;
        w->sw_park_end = r->ts + r->dur;
        break;
    }
    case D9A_REC_WAKE: {
        a->wakes++;
        if (r->id == 0 || late) { /* no task / its poll may be handed on already */
            if (spans) d9a_spans_wake(a, NULL, r);
            break;
        }
        task *t = d9a_task(a, r->id, true);
        if (!t) break;
        if (spans) d9a_spans_wake(a, t, r);
        d9m_wake_note(&t->wake, r->ts);
        break;
    }
    case D9A_REC_SAMPLE: on_sample(a, r); break;
    case D9A_REC_OFFCPU: on_offcpu(a, r, late); break;
    case D9A_REC_QUEUE:
        if (r->ref > 0) {
            a->qs_nonzero++;
            if (parked_at(a, r->ts, NULL)) a->qs_nonzero_while_parked++;
        }
        break;
    case D9A_REC_SPAWN: {
        task *t = d9a_task(a, r->id, true);
        loc_stats *L = d9a_loc(a, r->ref);
        if (!t || !L) break;
        if (t->spawned) { /* spawned again without a termination: the id was reused */
            loc_stats *old = t->loc != D9A_NO_ID ? d9a_loc(a, t->loc) : NULL;
            if (old) old->live--;
            a->live--;
            live_add(a, r->ts, -1);
        }
        t->spawned = true;
        t->loc = r->ref;
        L->spawned++;
        L->live++;
        a->spawned++;
        a->live++;
        live_add(a, r->ts, 1);
        break;
    }
    case D9A_REC_TERM: {
        a->terminated++; /* the span model's state of the task goes back at its release */
        task *t = d9a_task(a, r->id, false);
        if (!t || !t->spawned) a->terminated_unknown++;
        if (!t) break;
        loc_stats *L = t->loc != D9A_NO_ID ? d9a_loc(a, t->loc) : NULL;
        if (L) L->terminated++;
        if (t->spawned) {
            if (L) L->live--;
            a->live--;
            live_add(a, r->ts, -1);
        }
        finish_task(a, t);
        task_release(a, t);
        break;
    }
    default: break;
    }
}

/* The older half of what is held (all of it at the end) handed on in time order: the sorted
 * records and the span marks, merged in one walk (a mark after the records of its key). */
int d9a_sweep_flush(d9a_analysis *a, bool all) {
    d9a_rec_buf *b = &a->buf;
    size_t nm = d9a_span_marks_pending(&a->marks);
    if (b->n == 0 && nm == 0) return a->failed ? -1 : 0;
    d9a_rec_buf_sort(b);
    const d9a_span_mark *mk = nm ? d9a_span_marks_in_order(&a->marks) : NULL;
    if (nm && !mk) { /* out of memory for their sort */
        a->failed = true;
        return -1;
    }
    size_t k = all ? b->n + nm : (b->n + nm) / 2, i = 0, j = 0;
    for (;;) {
        /* the records before the next mark (or the rest), as many as are handed on */
        uint64_t mark_key = j < nm ? d9a_rec_sort_key(mk[j].ts, D9A_REC_QUEUE) : UINT64_MAX;
        size_t stop = k - j < b->n ? k - j : b->n;
        for (; i < stop && b->order[i].key <= mark_key; i++) {
            /* records are visited in time order, scattered in arrival order: fetch ahead */
            if (i + 8 < stop) __builtin_prefetch(&b->recs[b->order[i + 8].idx]);
            sweep_one(a, &b->recs[b->order[i].idx]);
        }
        if (i + j == k) break;
        if (!hand_on(a, mk[j].ts) && a->spans.model) d9a_spans_mark(a, &mk[j]);
        j++;
    }
    d9a_rec_buf_drop_first(b, i);
    d9a_span_marks_drop(&a->marks, j);
    return a->failed ? -1 : 0;
}

int d9a_sweep_finish(d9a_analysis *a) {
    if (d9a_sweep_flush(a, true) != 0) return -1;
    for (size_t i = 0; i < a->nwlist; i++) {
        close_pending(a, a->wlist[i], UINT64_MAX);
        d9a_attr_poll_end(a, a->wlist[i]);
    }
    for (uint32_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i].in_use) finish_task(a, &a->tasks[i]);
    return a->failed ? -1 : 0;
}
