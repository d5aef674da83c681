/* From decoded events to records: resolve each schema once (per decoder), pair each worker's
 * PollStart/PollEnd and park/unpark in stream order (one writer per worker, so stream order is
 * that worker's time order), pair each thread's SchedSwitch out/in, intern locations and
 * stacks, and keep what needs no timeline (summary counts, drops, metadata, symbols, kernel
 * scheduling delays, CPU time of busy periods). */
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"
#include "format/schemas.h"

/* A field of the event's schema by name, bound once by the decoder (format/dec_bindings.h). */
#define F(name) (in->field[D9_KF_##name])

void d9a_begin_file(d9a_analysis *a) {
    a->stream_known = false;
}

worker *d9a_worker_add(d9a_analysis *a, uint64_t id) {
    if (id < a->workers_cap && a->workers[id]) return a->workers[id];
    if (id > D9A_MAX_WORKER_ID || id == D9_WORKER_NONE) return NULL;
    if (id >= a->workers_cap) {
        size_t cap = a->workers_cap ? a->workers_cap : 16;
        while (cap <= id) cap *= 2;
        worker **p = realloc(a->workers, cap * sizeof *p);
        if (!p) {
            a->failed = true;
            return NULL;
        }
        memset(p + a->workers_cap, 0, (cap - a->workers_cap) * sizeof *p);
        a->workers = p;
        a->workers_cap = cap;
    }
    worker *w = a->workers[id];
    if (!w) {
        w = calloc(1, sizeof *w);
        if (!w) {
            a->failed = true;
            return NULL;
        }
        w->id = id;
        w->runtime = D9A_NO_ID;
        w->sw_poll_slot = -1;
        worker **l = realloc(a->wlist, (a->nwlist + 1) * sizeof *l);
        if (!l) {
            free(w);
            a->failed = true;
            return NULL;
        }
        a->wlist = l;
        a->wlist[a->nwlist++] = w;
        a->workers[id] = w;
    }
    return w;
}

static tid_state *tid_get(d9a_analysis *a, uint64_t tid) {
    uint64_t *i = d9_u64_map_get(&a->tid_index, tid);
    if (i) return &a->tids[*i];
    if (a->ntids == a->tids_cap) {
        uint32_t cap = a->tids_cap ? a->tids_cap * 2 : 64;
        tid_state *p = realloc(a->tids, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        a->tids = p;
        a->tids_cap = cap;
    }
    if (d9_u64_map_put(&a->tid_index, tid, a->ntids) != 0) return NULL;
    tid_state *t = &a->tids[a->ntids++];
    *t = (tid_state){.tid = tid, .out_worker = D9_WORKER_NONE};
    return t;
}

/* A worker id analyze keeps (ids over D9A_MAX_WORKER_ID name none). */
static inline uint64_t kept_worker(uint64_t wid) { return wid > D9A_MAX_WORKER_ID ? D9_WORKER_NONE : wid; }

/* A park, unpark or WorkerRegisteredEvent of thread `tid` naming worker `wid`: the thread's
 * worker from then on (model/thread_worker.h, the rule every reader follows). */
static void note_tid_worker(d9a_analysis *a, uint64_t tid, uint64_t wid) {
    uint64_t named;
    if (tid == 0 || kept_worker(wid) == D9_WORKER_NONE) return;
    if (d9m_thread_worker_note(&a->thread_workers, tid, wid, &named) != 0) a->failed = true;
}

static uint16_t worker_of_tid(d9a_analysis *a, uint64_t tid) {
    return (uint16_t)d9m_thread_worker_of(&a->thread_workers, tid);
}

static int emit(d9a_analysis *a, const d9a_rec *r) {
    if (d9a_rec_buf_push(&a->buf, r) != 0) return -1;
    if (d9a_records_full(a)) return d9a_sweep_flush(a, false);
    return 0;
}

static inline uint64_t field_u(const d9_event *ev, int idx, uint64_t dflt) {
    uint64_t v;
    if (idx >= 0 && d9_value_uint(&ev->values[idx], &v)) return v;
    return dflt;
}

static inline bool field_has_u(const d9_event *ev, int idx, uint64_t *v) {
    return idx >= 0 && d9_value_uint(&ev->values[idx], v);
}

static inline uint8_t sat8(uint64_t v) { return v > 255 ? 255 : (uint8_t)v; }

/* The interned id of a string field (a location): pooled strings are looked up once per
 * stream by pool id. */
static uint32_t string_field(d9a_analysis *a, const d9_event *ev, int idx, d9_decoder *dec) {
    if (idx < 0) return d9a_strings_intern(&a->strings, "<unknown>", 9);
    const d9_value *v = &ev->values[idx];
    if (!v->present) return d9a_strings_intern(&a->strings, "<unknown>", 9);
    if (v->type == D9_FT_POOLED_STRING) {
        uint64_t *c = d9_u64_map_get(&a->loc_cache, v->pool_id);
        if (c) return *c;
        d9_dec_str s = v->str;
        if (!v->resolved && !d9_dec_pool_string(dec, v->pool_id, &s)) {
            a->unresolved++;
            return d9a_strings_intern(&a->strings, "<unresolved>", 12);
        }
        uint32_t id = d9a_strings_intern(&a->strings, s.ptr, s.len);
        if (id != D9A_NO_ID && d9_u64_map_put(&a->loc_cache, v->pool_id, id) != 0) return D9A_NO_ID;
        return id;
    }
    d9_dec_str s;
    if (!d9_value_str(v, &s)) return d9a_strings_intern(&a->strings, "<unknown>", 9);
    return d9a_strings_intern(&a->strings, s.ptr, s.len);
}

static uint32_t stack_field(d9a_analysis *a, const d9_event *ev, int idx, d9_decoder *dec) {
    if (idx < 0 || !ev->values[idx].present) return d9a_stacks_intern(&a->stacks, NULL, 0);
    const d9_value *v = &ev->values[idx];
    if (v->type == D9_FT_POOLED_STACK) {
        uint64_t *c = d9_u64_map_get(&a->stack_cache, v->pool_id);
        if (c) return *c;
        const uint64_t *addrs = v->stack.addrs;
        uint32_t n = v->stack.count;
        if (!v->resolved && !d9_dec_pool_stack(dec, v->pool_id, &addrs, &n)) {
            a->unresolved++;
            return d9a_stacks_intern(&a->stacks, NULL, 0);
        }
        uint32_t id = d9a_stacks_intern(&a->stacks, addrs, n);
        if (id != D9A_NO_ID && d9_u64_map_put(&a->stack_cache, v->pool_id, id) != 0)
            return D9A_NO_ID;
        return id;
    }
    if (v->type == D9_FT_STACK) return d9a_stacks_intern(&a->stacks, v->stack.addrs, v->stack.count);
    return d9a_stacks_intern(&a->stacks, NULL, 0);
}

/* At the first timestamp read; whether the window holds any of the trace is judged at the
 * end (d9a_finish), when its last timestamp is known. */
static void resolve_window(d9a_analysis *a) {
    a->window_resolved = true;
    uint64_t start = a->opt.trace_span_known ? a->opt.trace_start_ts : a->first_ts;
    char err[8];
    (void)d9_time_window_resolve(&a->opt.from, &a->opt.to, start, a->opt.trace_end_ts, &a->win,
                                 err, sizeof err);
    if (!a->opt.from.set) a->win.from = 0;
    a->live_origin = a->opt.from.set ? a->win.from : a->first_ts;
}

/* The key's entry in a->meta, made when new; NULL when out of memory. */
static struct d9a_meta_entry *meta_entry(d9a_analysis *a, uint32_t key) {
    const uint64_t *at = d9_u64_map_get(&a->meta_by_key, key);
    if (at) return &a->meta[*at];
    if (a->nmeta == a->meta_cap) {
        size_t cap = a->meta_cap ? 2 * a->meta_cap : 32;
        struct d9a_meta_entry *m = realloc(a->meta, cap * sizeof *m);
        if (!m) return NULL;
        a->meta = m;
        a->meta_cap = cap;
    }
    if (d9_u64_map_put(&a->meta_by_key, key, a->nmeta) != 0) return NULL;
    a->meta[a->nmeta] = (struct d9a_meta_entry){key, D9A_NO_ID, D9A_NO_ID};
    return &a->meta[a->nmeta++];
}

/* Every SegmentMetadataEvent: each key's last value for the report. What the models take from
 * the metadata (the heap's rate, the schedstat source, the switch and poll CPU coverage) is
 * the recording's configuration: from the first one only, as it was. */
static void note_metadata(d9a_analysis *a, const d9_value *v) {
    if (!v || !v->present || v->type != D9_FT_STRING_MAP) return;
    bool first = !a->have_meta;
    a->have_meta = true;
    for (uint32_t i = 0; i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        uint32_t k = d9a_strings_intern(&a->strings, kv->key.ptr, kv->key.len);
        uint32_t val = d9a_strings_intern(&a->strings, kv->value.ptr, kv->value.len);
        struct d9a_meta_entry *m = k == D9A_NO_ID || val == D9A_NO_ID ? NULL : meta_entry(a, k);
        if (!m) {
            a->failed = true;
            return;
        }
        if (first && m->first == D9A_NO_ID) m->first = val;
        m->last = val;
        if (!first) continue;
        if (kv->key.len == sizeof D9M_HEAP_RATE_KEY - 1 && !memcmp(kv->key.ptr, D9M_HEAP_RATE_KEY, kv->key.len))
            d9m_heap_note_rate(&a->heap, kv->value.ptr, kv->value.len);
        int ss = d9m_schedstat_from_metadata(kv->key.ptr, kv->key.len, kv->value.ptr, kv->value.len);
        if (ss >= 0) a->schedstat = (d9m_schedstat)ss;
        d9m_coverage_metadata(&a->swcov, kv->key.ptr, kv->key.len, kv->value.ptr, kv->value.len);
        d9a_poll_cpu_cover_metadata(&a->pcov, kv->key.ptr, kv->key.len, kv->value.ptr, kv->value.len);
    }
}

static void add_drops(d9a_analysis *a, uint64_t n, uint32_t reason) {
    a->dropped += n;
    for (size_t i = 0; i < a->ndrop; i++)
        if (a->drop_reason[i] == reason) {
            a->drop_count[i] += n;
            return;
        }
    if (a->ndrop == a->drop_cap) {
        size_t cap = a->drop_cap ? a->drop_cap * 2 : 8;
        uint32_t *r = realloc(a->drop_reason, cap * sizeof *r);
        if (!r) {
            a->failed = true;
            return;
        }
        a->drop_reason = r;
        uint64_t *c = realloc(a->drop_count, cap * sizeof *c);
        if (!c) {
            a->failed = true;
            return;
        }
        a->drop_count = c;
        a->drop_cap = cap;
    }
    a->drop_reason[a->ndrop] = reason;
    a->drop_count[a->ndrop++] = n;
}

/* Polls and parks: the model's pairing rule (model/pairing.h) in stream order, which is each
 * worker's time order. */
static int on_poll_mark(d9a_analysis *a, worker *w, d9m_mark *k, const d9_event *ev,
                        d9_decoder *dec) {
    const d9m_mark *start;
    if (k->kind == D9M_POLL_START) {
        k->loc = string_field(a, ev, ev->schema->bind.field[D9_KF_SPAWN_LOC], dec);
        if (k->loc == D9A_NO_ID) return -1;
    }
    switch (d9m_pair(&w->pair, k, &start)) {
    case D9M_PAIR_REOPENED: a->unmatched_starts++; return 0;
    case D9M_PAIR_STRAY_END: a->unmatched_ends++; return 0;
    case D9M_PAIR_OPENED: return 0;
    case D9M_PAIR_CLOSED: break;
    }
    w->lp_valid = d9a_in_window(a, start->ts);
    w->lp_start = start->ts;
    if (!w->lp_valid) return 0;
    d9a_rec r = {.ts = start->ts,
                 .dur = k->ts > start->ts ? k->ts - start->ts : 0,
                 .id = start->task,
                 .ref = start->loc,
                 .worker = (uint16_t)w->id,
                 .kind = D9A_REC_POLL,
                 .aux = sat8(start->queue)};
    return emit(a, &r);
}

static int on_park(d9a_analysis *a, worker *w, const d9m_mark *k) {
    if (k->has_cpu && a->schedstat == D9M_SCHEDSTAT_UNSTATED) a->schedstat_seen++;
    if (k->tid) {
        w->tid = k->tid;
        note_tid_worker(a, k->tid, k->worker_id);
    }
    /* the busy period that ends here: CPU time against wall time */
    if (w->have_unpark && k->has_cpu && w->unpark_cpu > 0 && k->cpu_ns >= w->unpark_cpu &&
        k->ts > w->unpark_ts && d9a_in_window(a, w->unpark_ts)) {
        w->busy_periods++;
        w->busy_wall_ns += k->ts - w->unpark_ts;
        w->busy_cpu_ns += k->cpu_ns - w->unpark_cpu;
    }
    w->have_unpark = false;
    const d9m_mark *start;
    d9m_pair(&w->pair, k, &start);
    return a->failed ? -1 : 0;
}

static int on_unpark(d9a_analysis *a, worker *w, const d9m_mark *k) {
    if (k->tid) {
        w->tid = k->tid;
        note_tid_worker(a, k->tid, k->worker_id);
    }
    if (k->has_cpu && a->schedstat == D9M_SCHEDSTAT_UNSTATED) a->schedstat_seen++;
    if (k->has_sched_wait_field) {
        uint64_t wait = k->sched_wait_ns;
        a->sched_wait_fields++;
        if (wait > 0) a->schedstat_seen++;
        if (k->has_sched_wait && d9a_in_window(a, k->ts)) {
            d9a_hist_add(&a->sched_wait, wait);
            d9a_hist_add(&w->sched_wait, wait);
            if (wait > a->opt.sched_delay_warn_ns) a->sched_over_warn++;
            if (wait > a->opt.sched_delay_crit_ns) a->sched_over_crit++;
            long slot = d9a_topn_place(&a->sched_top, wait, NULL);
            if (slot >= 0)
                *(sched_entry *)d9a_topn_at(&a->sched_top, (size_t)slot) =
                    (sched_entry){k->ts, wait, k->tid, (uint16_t)w->id};
        }
    }
    w->have_unpark = true;
    w->unpark_ts = k->ts;
    w->unpark_cpu = k->cpu_ns;
    const d9m_mark *start;
    if (d9m_pair(&w->pair, k, &start) != D9M_PAIR_CLOSED) return 0;
    if (!d9a_in_window(a, start->ts)) return 0;
    d9a_rec r = {.ts = start->ts,
                 .dur = k->ts > start->ts ? k->ts - start->ts : 0,
                 .worker = (uint16_t)w->id,
                 .kind = D9A_REC_PARK};
    return emit(a, &r);
}

/* A long poll's CPU time (core/poll_cpu.h): written just after its PollEndEvent on the same
 * thread, so it is its worker's latest closed poll's (also when the next poll began at the
 * same time). A record at the poll's start, after the poll (records' kind order): the sweep
 * finds its poll open. */
static int on_poll_cpu(d9a_analysis *a, const d9_dec_binding *in, const d9_event *ev) {
    worker *w = d9a_worker(a, (uint32_t)field_u(ev, F(WORKER_ID), D9_WORKER_NONE));
    if (!w) return a->failed ? -1 : 0;
    if (!w->lp_valid) return 0;
    w->lp_valid = false;
    bool exact = field_u(ev, F(EXACT), 0) != 0;
    d9a_rec r = {.ts = w->lp_start,
                 .dur = exact ? field_u(ev, F(CPU_TIME_NS), 0) : 0,
                 .worker = (uint16_t)w->id,
                 .kind = D9A_REC_OFFCPU,
                 .aux = exact ? D9A_POLL_CPU_EXACT : D9A_POLL_CPU_NOT_EXACT};
    return emit(a, &r);
}

static int on_mark(d9a_analysis *a, const d9_event *ev, d9_decoder *dec) {
    d9m_mark k;
    if (!d9m_mark_read(ev, a->schedstat, &k)) return 0;
    worker *w = d9a_worker(a, k.worker_id);
    if (!w) return a->failed ? -1 : 0;
    switch (k.kind) {
    case D9M_PARK: return on_park(a, w, &k);
    case D9M_UNPARK: return on_unpark(a, w, &k);
    default: return on_poll_mark(a, w, &k, ev, dec);
    }
}

static int on_cpu_sample(d9a_analysis *a, const d9_dec_binding *in, const d9_event *ev,
                         d9_decoder *dec) {
    uint64_t source = field_u(ev, F(SOURCE), 0);
    if (source == 0) a->cpu_samples++;
    else a->offcpu_samples++;
    if (!d9a_in_window(a, ev->ts_ns)) return 0;
    /* without a worker id, its thread's worker's (model/thread_worker.h): a timer sample's as
     * much as a context-switch sample's, the thread was running as that worker */
    uint64_t tid, wid = kept_worker(field_u(ev, F(WORKER_ID), D9_WORKER_NONE));
    if (wid == D9_WORKER_NONE && field_has_u(ev, F(TID), &tid)) wid = d9m_record_worker(worker_of_tid(a, tid), wid);
    uint32_t stack = stack_field(a, ev, F(CALLCHAIN), dec);
    if (stack == D9A_NO_ID) return -1;
    d9a_rec r = {.ts = ev->ts_ns, .ref = stack, .worker = (uint16_t)wid,
                 .kind = D9A_REC_SAMPLE, .aux = source == 0 ? 0 : 1};
    return emit(a, &r);
}

/* How a stack was obtained: only "truncated" matters to the report (it says so under the
 * stack). Not bound to the window: it comes once, before the first event that uses it. */
static int on_stack_origin(d9a_analysis *a, const d9_dec_binding *in, const d9_event *ev,
                           d9_decoder *dec) {
    if (field_u(ev, F(METHOD), 0) != D9_ORIGIN_TRUNCATED) return 0;
    uint32_t stack = stack_field(a, ev, F(CALLCHAIN), dec);
    if (stack == D9A_NO_ID) return -1;
    return d9_u64_set_add(&a->truncated_stacks, stack) < 0 ? -1 : 0;
}

static int on_switch(d9a_analysis *a, const d9_dec_binding *in, const d9_event *ev) {
    uint64_t tid = field_u(ev, F(TID), 0);
    a->swcov.switch_seen = true;
    tid_state *t = tid_get(a, tid);
    if (!t) return -1;
    /* the record's worker, and its thread's from then on (model/thread_worker.h) */
    uint64_t wid;
    if (d9m_thread_worker_note(&a->thread_workers, tid, kept_worker(field_u(ev, F(WORKER_ID), D9_WORKER_NONE)),
                               &wid) != 0)
        return -1;
    if (field_u(ev, F(SWITCH_OUT), 0)) {
        t->out = true;
        t->out_ts = ev->ts_ns;
        t->preempted = field_u(ev, F(PREEMPTED), 0) != 0;
        t->out_worker = (uint16_t)wid;
        return 0;
    }
    if (!t->out) return 0;
    t->out = false;
    wid = d9m_switch_worker(t->out_worker, wid); /* the switch-in's overrides */
    if (wid == D9_WORKER_NONE || !d9a_in_window(a, t->out_ts)) return 0;
    d9a_rec r = {.ts = t->out_ts,
                 .dur = ev->ts_ns > t->out_ts ? ev->ts_ns - t->out_ts : 0,
                 .worker = (uint16_t)wid,
                 .kind = D9A_REC_OFFCPU,
                 .aux = t->preempted};
    return emit(a, &r);
}

static int on_symbol(d9a_analysis *a, const d9_event *ev) {
    d9m_symbol_event e;
    if (!d9m_symbol_read(ev, &e)) return 0;
    return d9a_symtab_add(&a->symtab, e.addr, e.size, e.name.ptr, e.name.len, e.file.ptr,
                          e.file.len, e.line, e.depth);
}

/* What the preload shim says a user must see: an io_uring ring it never saw waited on
 * (IoUringRingEvent, D9_SCH_IO_URING_RING), whose completions are missing. */
static int on_shim_note(d9a_analysis *a, const d9_event *ev) {
    const d9_dec_schema *s = ev->schema;
    /* "set up", then, at exit, "never waited through a call the shim sees" */
    int state = d9_schema_field_index(s, "state");
    const d9_value *v = state >= 0 ? &ev->values[state] : NULL;
    if (!v || !v->resolved || v->str.len < 5 || memcmp(v->str.ptr, "never", 5) != 0) return 0;
    uint64_t fd = field_u(ev, d9_schema_field_index(s, "ring_fd"), UINT64_MAX);
    for (uint64_t i = 0; i < a->unseen_rings && i < 4; i++)
        if (a->unseen_ring_fd[i] == fd) return 0; /* said again (each segment, each exit) */
    if (a->unseen_rings < 4) a->unseen_ring_fd[a->unseen_rings] = fd;
    a->unseen_rings++;
    return 0;
}

static inline __attribute__((always_inline)) int ingest(d9a_analysis *a, const d9_event *ev,
                                                          d9_decoder *dec) {
    const d9_dec_binding *in = &ev->schema->bind;
    if (!a->stream_known || ev->stream != a->cur_stream) {
        /* pool ids are per stream */
        d9_u64_map_clear(&a->loc_cache);
        d9_u64_map_clear(&a->stack_cache);
        memset(a->span_names, 0, sizeof a->span_names);
        a->cur_stream = ev->stream;
        a->stream_known = true;
    }
    a->events++;
    a->kind_counts[in->role]++;
    bool timed = ev->schema->has_timestamp && ev->ts_ns != 0;
    if (timed) {
        if (!a->have_first) {
            a->have_first = true;
            a->first_ts = a->min_ts = a->max_ts = ev->ts_ns;
            resolve_window(a);
        }
        if (ev->ts_ns < a->min_ts) a->min_ts = ev->ts_ns;
        if (ev->ts_ns > a->max_ts) a->max_ts = ev->ts_ns;
    }
    switch (in->role) {
    case D9_SCH_POLL_START: case D9_SCH_POLL_END: case D9_SCH_WORKER_PARK:
    case D9_SCH_WORKER_UNPARK: return timed ? on_mark(a, ev, dec) : 0;
    case D9_SCH_CPU_SAMPLE: return timed ? on_cpu_sample(a, in, ev, dec) : 0;
    case D9_SCH_SCHED_SWITCH: return timed ? on_switch(a, in, ev) : 0;
    case D9_SCH_UPLOAD_LOSS: /* whole-run totals: not bound to the window */
        return d9a_upload_loss_note(&a->upload_loss, ev) == 0 ? 0 : -1;
    case D9_SCH_COVERAGE: {
        d9_dec_str src = {"", 0}, mode = {"", 0};
        if (!timed || F(SOURCE) < 0 || F(MODE) < 0 || !d9_value_str(&ev->values[F(SOURCE)], &src) ||
            !d9_value_str(&ev->values[F(MODE)], &mode))
            return 0;
        d9a_coverage_add(&a->coverage, ev->ts_ns, src.ptr, src.len, mode.ptr, mode.len, field_u(ev, F(ONE_IN), 0));
        d9m_coverage_change(&a->swcov, ev->ts_ns, src.ptr, src.len, mode.ptr, mode.len);
        return 0;
    }
    case D9_SCH_SPAN_ENTER:
    case D9_SCH_SPAN_EXIT: {
        if (!timed || !d9a_in_window(a, ev->ts_ns)) return 0;
        if (!a->spans.model && d9a_spans_start(a) != 0) return -1;
        const d9_value *nv = F(SPAN_NAME) >= 0 ? &ev->values[F(SPAN_NAME)] : NULL;
        bool pooled = nv && nv->present && nv->type == D9_FT_POOLED_STRING;
        span_name_slot *cached = pooled ? &a->span_names[nv->pool_id & 3] : NULL;
        uint32_t name;
        if (cached && cached->known && cached->pool == nv->pool_id) {
            name = cached->name;
        } else {
            name = string_field(a, ev, F(SPAN_NAME), dec);
            if (name == D9A_NO_ID) return -1;
            if (cached && nv->resolved) *cached = (span_name_slot){nv->pool_id, name, true};
        }
        uint64_t wid = field_u(ev, F(WORKER_ID), D9_WORKER_NONE);
        d9a_span_mark *mk = d9a_span_marks_add(&a->marks, ev->ts_ns);
        if (!mk) return -1;
        *mk = (d9a_span_mark){.ts = ev->ts_ns, .span_id = field_u(ev, F(SPAN_ID), 0),
                              .task = field_u(ev, F(TASK_ID), 0), .name = name,
                              .worker = (uint16_t)(wid > D9_WORKER_NONE ? D9_WORKER_NONE : wid),
                              .begin = in->role == D9_SCH_SPAN_ENTER};
        return d9a_marks_full(a) ? d9a_sweep_flush(a, false) : 0;
    }
    case D9_SCH_QUEUE_SAMPLE: {
        if (!timed || !d9a_in_window(a, ev->ts_ns)) return 0;
        uint64_t q = field_u(ev, F(GLOBAL_QUEUE), 0);
        d9a_rec r = {.ts = ev->ts_ns, .ref = q > UINT32_MAX ? UINT32_MAX : (uint32_t)q,
                     .kind = D9A_REC_QUEUE};
        return emit(a, &r);
    }
    case D9_SCH_TASK_SPAWN: {
        if (!timed || !d9a_in_window(a, ev->ts_ns)) return 0;
        uint32_t loc = string_field(a, ev, F(SPAWN_LOC), dec);
        if (loc == D9A_NO_ID) return -1;
        d9a_rec r = {.ts = ev->ts_ns, .id = field_u(ev, F(TASK_ID), 0), .ref = loc,
                     .kind = D9A_REC_SPAWN};
        return emit(a, &r);
    }
    case D9_SCH_TASK_TERMINATE: {
        if (!timed || !d9a_in_window(a, ev->ts_ns)) return 0;
        d9a_rec r = {.ts = ev->ts_ns, .id = field_u(ev, F(TASK_ID), 0), .kind = D9A_REC_TERM};
        return emit(a, &r);
    }
    case D9_SCH_WAKE: {
        if (!timed || !d9a_in_window(a, ev->ts_ns)) return 0;
        uint64_t target = field_u(ev, F(TARGET_WORKER), D9_WORKER_NONE);
        d9a_rec r = {.ts = ev->ts_ns,
                     .id = field_u(ev, F(WOKEN_TASK_ID), 0),
                     .ref = (uint32_t)field_u(ev, F(WAKER_TASK_ID), 0),
                     .worker = (uint16_t)(target > D9_WORKER_NONE ? D9_WORKER_NONE : target),
                     .kind = D9A_REC_WAKE};
        return emit(a, &r);
    }
    case D9_SCH_SEGMENT_METADATA:
        if (F(ENTRIES) >= 0) note_metadata(a, &ev->values[F(ENTRIES)]);
        return a->failed ? -1 : 0;
    case D9_SCH_CLOCK_SYNC: {
        uint64_t real;
        if (!a->have_clock && timed && field_has_u(ev, F(REALTIME_NS), &real)) {
            a->have_clock = true;
            a->clock_mono = ev->ts_ns;
            a->clock_real = real;
        }
        return 0;
    }
    case D9_SCH_SYMBOL_TABLE_ENTRY: return on_symbol(a, ev);
    case D9_SCH_STACK_ORIGIN: return on_stack_origin(a, in, ev, dec);
    case D9_SCH_DROPPED_EVENTS: {
        d9_dec_str reason = {"unknown", 7};
        if (F(REASON) >= 0) d9_value_str(&ev->values[F(REASON)], &reason);
        uint32_t id = d9a_strings_intern(&a->strings, reason.ptr, reason.len);
        if (id == D9A_NO_ID) return -1;
        add_drops(a, field_u(ev, F(COUNT_FIELD), 0), id);
        if (timed)
            d9m_coverage_drop(&a->swcov, ev->ts_ns, field_u(ev, F(WORKER_ID), D9_WORKER_NONE),
                              field_u(ev, F(TID), 0));
        return a->failed ? -1 : 0;
    }
    case D9_SCH_WORKER_REGISTERED: {
        uint64_t wid = field_u(ev, F(WORKER_ID), D9_WORKER_NONE), tid = field_u(ev, F(TID), 0);
        worker *w = d9a_worker(a, wid);
        if (!w) return a->failed ? -1 : 0;
        if (tid) {
            w->tid = tid;
            note_tid_worker(a, tid, wid);
        }
        d9_dec_str rt;
        if (F(RUNTIME) >= 0 && d9_value_str(&ev->values[F(RUNTIME)], &rt))
            w->runtime = d9a_strings_intern(&a->strings, rt.ptr, rt.len);
        return a->failed ? -1 : 0;
    }
    case D9_SCH_ALLOC: { /* the whole trace, not the window: in-use needs every free after it */
        uint32_t stack = stack_field(a, ev, F(CALLCHAIN), dec);
        if (stack == D9A_NO_ID) return -1;
        return d9m_heap_alloc(&a->heap, ev->ts_ns, stack, field_u(ev, F(ADDR), 0), field_u(ev, F(SIZE), 0));
    }
    case D9_SCH_POLL_CPU: return timed ? on_poll_cpu(a, in, ev) : 0;
    case D9_SCH_FREE: return d9m_heap_free_event(&a->heap, ev->ts_ns, field_u(ev, F(ADDR), 0));
    case D9_SCH_MEMORY_MAP: {
        d9m_mapping_event e;
        if (!d9m_mapping_read(ev, &e)) return 0;
        return d9a_symtab_add_mapping(&a->symtab, e.start, e.end, e.file_offset, e.path.ptr,
                                      e.path.len);
    }
    case D9_SCH_IO_URING_RING: return on_shim_note(a, ev);
    default: return 0; /* task dumps, stack origins, task objects, other events */
    }
    return 0;
}

/* Here, next to ingest(), so that the per-event path is one call deep: ingest() is inlined
 * into both entry points. */
static inline __attribute__((always_inline)) int feed(d9a_analysis *a, const d9_event *ev,
                                                       d9_decoder *dec) {
    if (a->failed || a->finished) return -1;
    if (ingest(a, ev, dec) != 0 || a->failed) {
        a->failed = true;
        return -1;
    }
    return 0;
}

int d9a_feed(d9a_analysis *a, const d9_event *ev, d9_decoder *dec) { return feed(a, ev, dec); }

int d9a_feeder_event(void *feeder, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    d9a_feeder *f = feeder;
    if (!f->started || f->file != file_index) {
        d9a_begin_file(f->a);
        f->file = file_index;
        f->started = true;
    }
    return feed(f->a, ev, dec) != 0 ? 1 : 0;
}
