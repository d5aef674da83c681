/* Draining: every thread's ring read from its tail to the head published when the drain
 * began, through the chain of rings it grew, each record decoded with the thread's state
 * (current task, worker, last schedstat reading) and merged in time order with the sources'
 * events; each goes straight on to the inline encoder. */
#include "core/collector_encode.h"

#include <stdlib.h>
#include <string.h>

#include "core/event_types.h"
#include "core/records.h"
#include "core/workers.h"

static uint64_t ticks_to_ns(d9_collector *c, uint64_t w0) {
    return d9_clock_map_to_ns_fast(&c->clock, d9_ticks_unwrap56(D9_REC_TICKS56(w0), c->now_ticks));
}

/* Point the cursor at the ring that holds its position. A ring added after the drain read the
 * thread's head starts at or after that head, so the chain seen now covers [pos, end). */
static void cursor_set_ring(cursor *k, d9_ring *from) {
    d9_ring *r = d9_ring_for(from, k->pos);
    d9_ring *n = atomic_load_explicit(&r->newer, memory_order_acquire);
    k->ring = r;
    k->base = r->words;
    k->mask = r->mask;
    k->next_start = n ? n->start : UINT64_MAX;
    if (!r->words) k->next_start = 0; /* keeps the check below on the rare path */
}

/* Skip PAD records; false when the cursor is exhausted. */
static inline bool cursor_peek(d9_collector *c, cursor *k) {
    while (k->pos < k->end) {
        if (__builtin_expect(k->pos >= k->next_start, 0)) {
            cursor_set_ring(k, k->ring);
            if (!k->base) break; /* records in a ring that has no memory: a corrupt head */
        }
        const uint64_t *r = k->base + (k->pos & k->mask);
        if (D9_REC_KIND(r[0]) == D9_REC_PAD) {
            k->pos = (k->pos & ~k->mask) + k->mask + 1;
            continue;
        }
        uint64_t n = d9_record_words(r);
        if (n == 0 || k->pos + n > k->end || (k->pos & k->mask) + n > k->mask + 1) {
            k->pos = k->end; /* a corrupt ring (the application wrote over it): stop here */
            return false;
        }
        k->next_ts = ticks_to_ns(c, r[0]);
        k->words = n;
        return true;
    }
    return false;
}

/* Each kind emits in its own case, so the inlined encoder specialises to it. Records are
 * counted per drain, not with a locked add per event. */
#define break_emit                \
    t->c_events++;                \
    c->recorded_in_drain++;       \
    emit(c, &e);                  \
    break

static void decode_record(d9_collector *c, d9_thread *t, const uint64_t *r, uint64_t ts) {
    out_event e; /* not zeroed: each kind sets what its encoding reads (this runs per event) */
    e.ts = ts;
    uint64_t tid = (uint64_t)t->tid;
    switch (D9_REC_KIND(r[0])) {
    case D9_REC_POLL_BEGIN:
        t->c_task = r[1];
        e.schema = D9_SCH_POLL_START;
        e.v[0] = t->c_worker; e.v[1] = r[2] >> 32; e.v[2] = r[1]; e.v[3] = r[2] & 0xffffffffu;
        break_emit;
    case D9_REC_POLL_END:
        t->c_task = 0;
        e.schema = D9_SCH_POLL_END;
        e.v[0] = t->c_worker;
        break_emit;
    case D9_REC_PARK:
    case D9_REC_UNPARK: {
        bool park = D9_REC_KIND(r[0]) == D9_REC_PARK;
        /* The run-queue wait since the thread's previous reading: that reading is at most the
         * schedstat resolution older than the park (see d9_schedstat_min_ticks). Not read (the
         * park was shorter than the resolution) or no schedstat: both fields are absent ("not
         * measured"), so a reader pairing CPU times never pairs a stale one. */
        uint64_t cpu = D9_ABSENT, delay = D9_ABSENT;
        if (r[1] != D9_NS_NOT_READ) {
            if (!park && r[2] != D9_NS_UNKNOWN && t->c_ss_wait != D9_NS_UNKNOWN && r[2] >= t->c_ss_wait)
                delay = r[2] - t->c_ss_wait;
            t->c_ss_wait = r[2];
            cpu = r[1]; /* D9_NS_UNKNOWN is D9_ABSENT */
            _Static_assert(D9_NS_UNKNOWN == D9_ABSENT, "no schedstat reads as absent");
        }
        e.schema = park ? D9_SCH_WORKER_PARK : D9_SCH_WORKER_UNPARK;
        e.v[0] = t->c_worker; e.v[1] = r[3]; e.v[2] = cpu; e.v[3] = delay; e.v[4] = tid;
        break_emit;
    }
    case D9_REC_WAKE:
    case D9_REC_WAKE_READY:
        e.schema = D9_SCH_WAKE;
        e.v[0] = D9_REC_KIND(r[0]) == D9_REC_WAKE ? t->c_task : 0;
        e.v[1] = r[1]; e.v[2] = t->c_worker;
        break_emit;
    case D9_REC_SPAWN:
        e.schema = D9_SCH_TASK_SPAWN;
        e.v[0] = r[1]; e.v[1] = r[2];
        if (r[3]) { /* the object the task stands for, right after its spawn */
            t->c_events++;
            c->recorded_in_drain++;
            emit(c, &e);
            e.schema = D9_SCH_TASK_OBJECT;
            e.v[1] = r[3];
        }
        break_emit;
    case D9_REC_TERMINATE:
        e.schema = D9_SCH_TASK_TERMINATE;
        e.v[0] = r[1];
        break_emit;
    case D9_REC_WORKER_BEGIN: {
        t->c_worker = (uint32_t)r[1];
        uint32_t index = 0;
        const char *rt = d9_workers_describe(t->c_worker, &index);
        e.schema = D9_SCH_WORKER_REGISTERED;
        e.v[0] = t->c_worker; e.v[1] = tid; e.v[2] = index;
        e.s[0] = rt ? rt : "?"; e.s[1] = t->name;
        break_emit;
    }
    case D9_REC_WORKER_END:
        t->c_worker = 255;
        return;
    case D9_REC_DROPPED:
        d9_col_report_ring_drops(c, t, r[1], ts);
        return;
    case D9_REC_TASK_DUMP:
        e.schema = D9_SCH_TASK_DUMP;
        e.v[0] = r[1];
        { /* unwound here, by the source that wrote it: the stack copy rides in the record */
            uint8_t method = 0;
            e.nframes = c->dump_unwind ? c->dump_unwind(r + 3, r[2], c->dump_frames, DUMP_MAX_FRAMES, &method) : 0;
            e.v[1] = method;
        }
        e.payload = c->dump_frames;
        break_emit;
    case D9_REC_CUSTOM:
        e.custom = d9_event_type_at((uint32_t)r[1]);
        if (!e.custom) return;
        e.schema = UINT16_MAX;
        e.payload = r + 2;
        break_emit;
    default:
        return;
    }
#undef break_emit
}

/* ---------------------------------------------------------------- source events */

static d9_thread *thread_by_tid(d9_collector *c, uint32_t tid) {
    for (size_t i = 0; i < c->thread_count; i++)
        if ((uint32_t)c->threads[i]->tid == tid) return c->threads[i];
    return NULL;
}

void d9_col_source_event_to_out(d9_collector *c, const d9_src_event *se, out_event *e) {
    memset(e, 0, sizeof *e);
    e->ts = se->ts_ns;
    d9_thread *t = se->tid ? thread_by_tid(c, se->tid) : NULL;
    uint64_t worker = t ? t->c_worker : 255;
    uint64_t cpu = se->cpu >= 0 ? (uint64_t)se->cpu : UINT64_MAX;
    switch (se->kind) {
    case D9_SRC_CPU_SAMPLE:
        e->schema = D9_SCH_CPU_SAMPLE;
        e->v[0] = worker; e->v[1] = se->tid; e->v[2] = se->sample.source; e->v[3] = cpu;
        e->v[4] = se->sample.method;
        e->s[0] = t ? t->name : NULL;
        e->payload = se->sample.frames;
        e->nframes = se->sample.nframes;
        break;
    case D9_SRC_SWITCH:
        e->schema = D9_SCH_SCHED_SWITCH;
        e->v[0] = se->tid; e->v[1] = worker; e->v[2] = se->sw.out; e->v[3] = se->sw.preempted; e->v[4] = cpu;
        break;
    case D9_SRC_MMAP:
        e->schema = D9_SCH_MEMORY_MAP;
        e->v[0] = se->map.start; e->v[1] = se->map.end; e->v[2] = se->map.file_offset;
        e->s[0] = se->map.path; e->s[1] = se->map.build_id;
        break;
    case D9_SRC_COVERAGE:
        e->schema = D9_SCH_COVERAGE;
        e->s[0] = se->coverage.source; e->s[1] = se->coverage.mode; e->s[2] = se->coverage.previous;
        e->v[0] = se->coverage.previous_since_ns; e->v[1] = se->coverage.one_in;
        e->v[2] = se->coverage.rate_per_s; e->v[3] = se->coverage.cost_ppm; e->v[4] = se->coverage.budget_ppm;
        break;
    default: /* D9_SRC_LOST */
        e->schema = D9_SCH_DROPPED_EVENTS;
        e->v[0] = se->lost.count; e->v[1] = se->tid; e->v[2] = worker;
        e->s[0] = se->lost.reason;
        atomic_fetch_add(&c->st_ring_dropped, se->lost.count);
        c->src_lost_in_out += se->lost.count; /* converted only to be emitted at once */
        break;
    }
}

bool d9_col_refresh_threads(d9_collector *c) {
    free(c->threads);
    c->threads = d9_threads_snapshot(&c->thread_count);
    if (!c->threads) {
        c->thread_count = 0;
        return false;
    }
    if (c->cursor_cap < c->thread_count) {
        cursor *k = realloc(c->cursors, c->thread_count * sizeof *k);
        if (!k) return false;
        c->cursors = k;
        c->cursor_cap = c->thread_count;
    }
    return true;
}

double d9_col_merge(d9_collector *c) {
    double fullest = 0;
    size_t live = 0;
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        cursor *k = &c->cursors[live];
        k->t = t;
        k->pos = atomic_load_explicit(&t->tail, memory_order_relaxed);
        k->end = atomic_load_explicit(&t->head_pub, memory_order_acquire);
        t->c_end = k->end;
        cursor_set_ring(k, t->c_ring);
        d9_ring *newest = d9_ring_for(k->ring, k->end);
        double fill = newest->words ? (double)(k->end - k->pos) / (double)(newest->mask + 1) : 0;
        if (fill > fullest) fullest = fill;
        if (cursor_peek(c, k)) live++;
    }

    d9_src_batch_reset(&c->batch);
    for (size_t i = 0; i < c->source_count; i++) c->sources[i]->collect(c->sources[i], &c->batch);
    d9_src_batch_sort(&c->batch);
    size_t next_src = 0;

    /* Merge: always take the earliest pending record among the threads and the sources. The
     * earliest thread then goes on alone while it stays before every other candidate (ties go
     * back to the full comparison, which prefers the lower index and then the thread). */
    while (live > 0 || next_src < c->batch.count) {
        size_t best = 0;
        uint64_t others = UINT64_MAX; /* the earliest of the other threads */
        for (size_t i = 1; i < live; i++) {
            if (c->cursors[i].next_ts < c->cursors[best].next_ts) {
                others = c->cursors[best].next_ts;
                best = i;
            } else if (c->cursors[i].next_ts < others) {
                others = c->cursors[i].next_ts;
            }
        }
        uint64_t src_ts = next_src < c->batch.count ? c->batch.events[next_src].ts_ns : UINT64_MAX;
        if (next_src < c->batch.count && (live == 0 || src_ts < c->cursors[best].next_ts)) {
            out_event e;
            d9_col_source_event_to_out(c, &c->batch.events[next_src++], &e);
            emit(c, &e);
            continue;
        }
        cursor *k = &c->cursors[best];
        d9_thread *t = k->t;
        do {
            decode_record(c, t, k->base + (k->pos & k->mask), k->next_ts);
            k->pos += k->words;
            if (!cursor_peek(c, k)) {
                c->cursors[best] = c->cursors[--live];
                break;
            }
        } while (k->next_ts < others && k->next_ts <= src_ts);
    }
    return fullest;
}
