#include "core/collector.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/event_types.h"
#include "core/locations.h"
#include "core/records.h"
#include "core/run_metadata.h"
#include "core/schedstat.h"
#include "core/source_batch.h"
#include "core/stack_table.h"
#include "core/string_table.h"
#include "core/thread_buffer.h"
#include "core/workers.h"
#include "format/schemas.h"
#include "format/wire.h"
#include "sinks/segment_writer.h"

#define FLUSH_BYTES (256u * 1024u)
#define FINAL_RESERVE_BYTES (16u * 1024u)
#define MAX_SOURCES 8
#define SCHEMA_SLOTS (D9_SCH_FIRST_CUSTOM + D9_MAX_EVENT_TYPES)
#define DUMP_MAX_FRAMES 128

/* One event ready to encode: the record's values after the thread's decoding state (current
 * task, last park) has been applied, so it can be encoded twice if a rotation interrupts it. */
typedef struct out_event {
    uint16_t schema;
    uint64_t ts;
    uint64_t v[5];
    const char *s[3];
    const d9_event_type *custom;
    const uint64_t *payload; /* custom: payload words; stacks: frames */
    uint32_t nframes;
} out_event;

/* A thread's unread records during one drain. */
typedef struct cursor {
    d9_thread *t;
    uint64_t pos, end;
    const uint64_t *base;  /* the words of the ring that holds pos ... */
    uint64_t mask;
    d9_ring *ring;         /* ... that ring, */
    uint64_t next_start;   /* and where the next one in the chain starts (UINT64_MAX: none yet) */
    uint64_t next_ts; /* ts of the record at pos (valid while pos < end) */
    uint64_t words;   /* its length */
} cursor;

struct d9_collector {
    d9_segment_writer *w;
    d9_run_metadata meta;
    uint32_t meta_workers;     /* worker ids below this are in the segment's runtime.<name> lists */
    d9_clock_map clock;
    uint64_t now_ticks, now_ns;
    uint64_t schedstat_res_ns;

    d9_buf out, scratch;
    uint64_t out_events;       /* events in `out` not yet written */
    d9_stream_state st;
    uint64_t epoch;
    bool stream_open;          /* false once the writer moved to another file or lost bytes */
    uint64_t room;             /* the writer's room, as of its last change (only we change it) */
    uint64_t stream_no;        /* marks below are valid when equal to this */
    uint64_t schema_mark[SCHEMA_SLOTS];
    uint64_t *loc_mark;
    size_t loc_mark_len;
    d9_string_table strings;
    d9_stack_table stacks;

    d9_dump_unwind_fn dump_unwind;
    uint64_t dump_frames[DUMP_MAX_FRAMES]; /* the task dump being encoded */
    d9_source *sources[MAX_SOURCES];
    size_t source_count;
    d9_src_batch batch;      /* this drain's source events, sorted */
    d9_src_batch seg_batch;  /* what sources add at a segment start */

    uint64_t write_drops_pending; /* events lost to failed writes, not yet reported */
    uint64_t write_drops_in_out;  /* the part of it reported inside `out` */
    uint64_t src_lost_in_out;     /* sources' lost counts reported inside `out` */
    bool write_failed;            /* a write failed in this drain: retry on the next one only */

    d9_thread **threads;
    size_t thread_count;
    cursor *cursors;
    size_t cursor_cap;

    _Atomic uint64_t st_recorded, st_written, st_write_dropped, st_ring_dropped;
    uint64_t recorded_in_drain;
    _Atomic uint32_t st_threads;
    /* copies of the writer's counters, so other threads never touch the writer */
    _Atomic uint64_t st_bytes, st_write_errors, st_sealed, st_deleted;
};

static void publish_writer_stats(d9_collector *c) {
    d9_segw_stats ws;
    d9_segw_get_stats(c->w, &ws);
    atomic_store(&c->st_bytes, ws.bytes_written);
    atomic_store(&c->st_write_errors, ws.write_errors);
    atomic_store(&c->st_sealed, ws.segments_sealed);
    atomic_store(&c->st_deleted, ws.files_deleted);
}

/* ---------------------------------------------------------------- stream prerequisites */

static inline void need_schema(d9_collector *c, uint16_t id, const d9_schema_def *def) {
    if (__builtin_expect(c->schema_mark[id] == c->stream_no, 1)) return;
    d9_enc_schema(&c->out, id, def);
    c->schema_mark[id] = c->stream_no;
}

static void need_builtin(d9_collector *c, uint16_t id) { need_schema(c, id, &d9_builtin_schemas[id]); }

static void write_pool_string(d9_collector *c, uint32_t id, const char *s) {
    d9_pool_frame pf;
    d9_enc_string_pool_begin(&c->out, &pf);
    d9_enc_string_pool_entry(&c->out, &pf, id, s, strlen(s));
    d9_enc_pool_end(&c->out, &pf);
}

static uint32_t need_loc_slow(d9_collector *c, uint32_t id) {
    if (id >= c->loc_mark_len) {
        size_t n = c->loc_mark_len ? c->loc_mark_len : 1024;
        while (n <= id) n *= 2;
        uint64_t *m = realloc(c->loc_mark, n * sizeof *m);
        if (!m) return id; /* written again below: costs bytes, not correctness */
        memset(m + c->loc_mark_len, 0, (n - c->loc_mark_len) * sizeof *m);
        c->loc_mark = m;
        c->loc_mark_len = n;
    }
    if (id < c->loc_mark_len && c->loc_mark[id] == c->stream_no) return id;
    write_pool_string(c, id, d9_loc_name(id));
    if (id < c->loc_mark_len) c->loc_mark[id] = c->stream_no;
    return id;
}

static inline uint32_t need_loc(d9_collector *c, uint32_t id) {
    if (__builtin_expect(id < c->loc_mark_len && c->loc_mark[id] == c->stream_no, 1)) return id;
    return need_loc_slow(c, id);
}

/* Pool ids of other strings live above the location ids. */
static uint32_t need_string(d9_collector *c, const char *s) {
    d9_string_entry *e = d9_string_table_get(&c->strings, s ? s : "");
    if (!e) return need_loc(c, D9_LOC_UNKNOWN);
    uint32_t id = 0x80000000u + e->index;
    if (e->mark != c->stream_no) {
        write_pool_string(c, id, e->str);
        e->mark = c->stream_no;
    }
    return id;
}

/* A pooled stack, written once per stream; one that says how it was obtained (`method`, a
 * d9_stack_method) is followed by a StackOriginEvent the first time in each stream. */
static uint32_t need_stack(d9_collector *c, const uint64_t *frames, uint32_t n, uint8_t method, uint64_t ts) {
    d9_stack_entry *e = d9_stack_table_get_tagged(&c->stacks, frames, n, method);
    if (!e) e = d9_stack_table_get(&c->stacks, NULL, 0); /* no memory: an empty stack */
    if (!e) return 0;
    if (e->mark != c->stream_no) {
        d9_pool_frame pf;
        d9_enc_stack_pool_begin(&c->out, &pf);
        d9_enc_stack_pool_entry(&c->out, &pf, e->index, e->frames, e->count);
        d9_enc_pool_end(&c->out, &pf);
        e->mark = c->stream_no;
        if (e->tag) {
            need_builtin(c, D9_SCH_STACK_ORIGIN);
            d9_enc_event(&c->out, &c->st, D9_SCH_STACK_ORIGIN, ts);
            d9_put_u32(&c->out, e->index);
            d9_put_u8(&c->out, e->tag);
        }
    }
    return e->index;
}

/* ---------------------------------------------------------------- encoding */

/* The segment's metadata: the run's entries and every runtime's workers known so far. */
static void encode_metadata(d9_collector *c, uint64_t ts) {
    c->meta_workers = d9_workers_count(); /* before listing them: a later one is caught later */
    need_builtin(c, D9_SCH_SEGMENT_METADATA);
    d9_enc_event(&c->out, &c->st, D9_SCH_SEGMENT_METADATA, ts);
    d9_pool_frame map;
    d9_enc_string_map_begin(&c->out, &map);
    d9_run_metadata_encode(&c->meta, &c->out, &map);
    d9_enc_string_map_end(&c->out, &map);
}

static void encode_preamble(d9_collector *c) {
    encode_metadata(c, c->now_ns);

    need_builtin(c, D9_SCH_CLOCK_SYNC);
    uint64_t mono, real;
    d9_clock_realtime_pair(&mono, &real);
    d9_enc_event(&c->out, &c->st, D9_SCH_CLOCK_SYNC, mono);
    d9_put_varint(&c->out, real);
}

static uint8_t sat8(uint64_t v) { return v > 255 ? 255 : (uint8_t)v; }

/* The largest core event (a park: three varints, a byte and a u32) after its frame header. */
#define CORE_FIELDS_MAX 40

/* Start a core event: its schema is declared, room for the worst case is reserved once, so the
 * fields go in with raw stores. NULL when memory ran out (the buffer is marked failed). */
static inline uint8_t *begin_core(d9_collector *c, const out_event *e) {
    need_builtin(c, e->schema);
    uint8_t *p = d9_buf_reserve(&c->out, D9_RAW_EVENT_MAX + CORE_FIELDS_MAX);
    return p ? d9_raw_event(p, &c->st, e->schema, e->ts) : NULL;
}

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* The events every hook makes, inlined where the schema is known so the switch folds away.
 * False for any other schema (encode_other's). */
static ALWAYS_INLINE bool encode_core(d9_collector *c, const out_event *e) {
    d9_buf *b = &c->out;
    uint8_t *p;
    switch (e->schema) {
    case D9_SCH_POLL_START: {
        uint32_t loc = need_loc(c, (uint32_t)e->v[3]);
        if (!(p = begin_core(c, e))) break;
        p = d9_raw_varint(p, e->v[0]);
        p = d9_raw_u8(p, sat8(e->v[1]));
        p = d9_raw_varint(p, e->v[2]);
        p = d9_raw_u32(p, loc);
        d9_buf_commit(b, p);
        break;
    }
    case D9_SCH_POLL_END:
    case D9_SCH_TASK_TERMINATE:
        if (!(p = begin_core(c, e))) break;
        d9_buf_commit(b, d9_raw_varint(p, e->v[0]));
        break;
    case D9_SCH_WORKER_PARK:
    case D9_SCH_WORKER_UNPARK:
        if (!(p = begin_core(c, e))) break;
        p = d9_raw_varint(p, e->v[0]);
        p = d9_raw_u8(p, sat8(e->v[1]));
        p = d9_raw_opt_varint(p, e->v[2]);
        if (e->schema == D9_SCH_WORKER_UNPARK) p = d9_raw_opt_varint(p, e->v[3]);
        p = d9_raw_u32(p, (uint32_t)e->v[4]);
        d9_buf_commit(b, p);
        break;
    case D9_SCH_WAKE:
        if (!(p = begin_core(c, e))) break;
        p = d9_raw_varint(p, e->v[0]);
        p = d9_raw_varint(p, e->v[1]);
        p = d9_raw_u8(p, sat8(e->v[2]));
        d9_buf_commit(b, p);
        break;
    case D9_SCH_TASK_SPAWN: {
        uint32_t loc = need_loc(c, (uint32_t)e->v[1]);
        if (!(p = begin_core(c, e))) break;
        p = d9_raw_varint(p, e->v[0]);
        p = d9_raw_u32(p, loc);
        p = d9_raw_u8(p, 1);
        d9_buf_commit(b, p);
        break;
    }
    default:
        return false;
    }
    return true;
}

static __attribute__((noinline)) void encode_other(d9_collector *c, const out_event *e) {
    d9_buf *b = &c->out;
    switch (e->schema) {
    case D9_SCH_DROPPED_EVENTS: {
        need_builtin(c, e->schema);
        uint32_t reason = need_string(c, e->s[0]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_u32(b, reason);
        d9_put_u32(b, (uint32_t)e->v[1]);
        d9_put_varint(b, e->v[2]);
        break;
    }
    case D9_SCH_WORKER_REGISTERED: {
        need_builtin(c, e->schema);
        uint32_t runtime = need_string(c, e->s[0]);
        uint32_t name = need_string(c, e->s[1]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_u32(b, (uint32_t)e->v[1]);
        d9_put_u32(b, runtime);
        d9_put_varint(b, e->v[2]);
        d9_put_u32(b, name);
        /* A worker the segment's metadata does not list yet: write it again, complete, so a
         * reader of this segment alone learns every runtime's workers (dial9's viewer takes
         * runtimes from the metadata only, and keeps the last list of each). Part of this
         * event's bytes, so a rotation moves both to the next segment together. */
        if (e->v[0] < D9_MAX_WORKERS && e->v[0] >= c->meta_workers) encode_metadata(c, e->ts);
        break;
    }
    case D9_SCH_CPU_SAMPLE: {
        need_builtin(c, e->schema);
        uint32_t name = e->s[0] ? need_string(c, e->s[0]) : 0;
        uint32_t stack = need_stack(c, e->payload, e->nframes, (uint8_t)e->v[4], e->ts);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);               /* worker */
        d9_put_u32(b, (uint32_t)e->v[1]);        /* tid */
        d9_put_u8(b, (uint8_t)e->v[2]);          /* source */
        d9_put_u8(b, e->s[0] ? 1 : 0);
        if (e->s[0]) d9_put_u32(b, name);
        d9_put_u32(b, stack);
        d9_put_u8(b, e->v[3] != UINT64_MAX ? 1 : 0); /* cpu */
        if (e->v[3] != UINT64_MAX) d9_put_varint(b, e->v[3]);
        break;
    }
    case D9_SCH_TASK_DUMP: {
        need_builtin(c, e->schema);
        uint32_t stack = need_stack(c, e->payload, e->nframes, (uint8_t)e->v[1], e->ts);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_u32(b, stack);
        break;
    }
    case D9_SCH_SCHED_SWITCH:
        need_builtin(c, e->schema);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_u32(b, (uint32_t)e->v[0]);  /* tid */
        d9_put_varint(b, e->v[1]);         /* worker */
        d9_put_u8(b, e->v[2] ? 1 : 0);     /* switch out */
        d9_put_u8(b, e->v[3] ? 1 : 0);     /* preempted */
        d9_put_u8(b, e->v[4] != UINT64_MAX ? 1 : 0);
        if (e->v[4] != UINT64_MAX) d9_put_varint(b, e->v[4]);
        break;
    case D9_SCH_COVERAGE: {
        need_builtin(c, e->schema);
        uint32_t src = need_string(c, e->s[0]), mode = need_string(c, e->s[1]);
        uint32_t prev = need_string(c, e->s[2]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_u32(b, src);
        d9_put_u32(b, mode);
        d9_put_u32(b, prev);
        for (int i = 0; i < 5; i++) d9_put_varint(b, e->v[i]);
        break;
    }
    case D9_SCH_TASK_OBJECT:
        need_builtin(c, e->schema);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_varint(b, e->v[1]);
        break;
    case D9_SCH_MEMORY_MAP: {
        need_builtin(c, e->schema);
        uint32_t path = need_string(c, e->s[0]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_varint(b, e->v[1]);
        d9_put_varint(b, e->v[2]);
        d9_put_u32(b, path);
        d9_put_lstring(b, e->s[1], strlen(e->s[1]));
        break;
    }
    default: { /* custom event */
        const d9_event_type *t = e->custom;
        uint16_t id = (uint16_t)(D9_SCH_FIRST_CUSTOM + t->index);
        need_schema(c, id, &t->def);
        uint32_t pooled[D9_MAX_EVENT_FIELDS];
        const uint64_t *w = e->payload;
        for (uint16_t i = 0; i < t->field_count; i++) {
            if (t->kinds[i] == D9_STATIC_STRING) pooled[i] = need_string(c, (const char *)(uintptr_t)*w);
            w += t->kinds[i] == D9_STRING ? 1 + (*w + 7) / 8 : 1;
        }
        d9_enc_event(b, &c->st, id, e->ts);
        w = e->payload;
        for (uint16_t i = 0; i < t->field_count; i++) {
            switch (t->kinds[i]) {
            case D9_U64: d9_put_varint(b, *w++); break;
            case D9_I64: d9_put_u64(b, *w++); break;
            case D9_F64: d9_put_u64(b, *w++); break;
            case D9_BOOL: d9_put_u8(b, *w++ ? 1 : 0); break;
            case D9_STATIC_STRING: d9_put_u32(b, pooled[i]); w++; break;
            case D9_STRING: d9_put_lstring(b, (const char *)(w + 1), *w); w += 1 + (*w + 7) / 8; break;
            }
        }
        break;
    }
    }
}

static ALWAYS_INLINE void encode(d9_collector *c, const out_event *e) {
    if (!encode_core(c, e)) encode_other(c, e);
}

/* ---------------------------------------------------------------- writing */

/* After any call that may have changed the writer (write, rotate): its room, and whether it
 * moved to another file or lost bytes (then the next event starts a new stream). Only this
 * thread changes the writer, so the hot path checks these copies instead of calling it. */
static void writer_changed(d9_collector *c) {
    c->room = d9_segw_room(c->w);
    if (d9_segw_epoch(c->w) != c->epoch) c->stream_open = false;
}

static void flush_out(d9_collector *c) {
    if (c->out.len == 0) return;
    /* After a failure, the rest of this drain is counted as lost without touching the disk,
     * so a full disk costs one failed write per drain, not one per buffer. */
    bool ok = !c->out.failed && !c->write_failed && d9_segw_write(c->w, c->out.data, c->out.len) == 0;
    /* Drop reports of threads are confirmed once written; a lost one is reported again. */
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        if (ok) t->c_drops_written = t->c_drops_reported;
        else t->c_drops_reported = t->c_drops_written;
    }
    if (ok) {
        atomic_fetch_add(&c->st_written, c->out_events);
        c->write_drops_pending -= c->write_drops_in_out;
    } else {
        /* A source's loss report that went down with the write is reported again (as part of
         * the write_error count, so the total stays exact; it is counted already). */
        c->write_drops_pending += c->out_events + c->src_lost_in_out;
        atomic_fetch_add(&c->st_write_dropped, c->out_events);
        c->stream_open = false; /* the writer bumped its epoch; make sure we notice */
        c->write_failed = true;
    }
    c->write_drops_in_out = 0;
    c->src_lost_in_out = 0;
    c->out_events = 0;
    d9_buf_clear(&c->out);
    writer_changed(c);
}

static void emit_write_drop_report(d9_collector *c);
static void encode_sources_segment_start(d9_collector *c);
static void hand_over_exited_drops(d9_collector *c);

/* Start a new stream when the writer moved to another file or lost bytes. */
static void open_stream(d9_collector *c) {
    flush_out(c);
    c->epoch = d9_segw_epoch(c->w);
    c->room = d9_segw_room(c->w);
    c->stream_open = true;
    c->stream_no++;
    d9_enc_header(&c->out, &c->st);
    if (d9_segw_at_segment_start(c->w)) {
        encode_preamble(c);
        /* Say which threads are workers, so each segment stands alone. */
        for (size_t i = 0; i < c->thread_count; i++) {
            d9_thread *t = c->threads[i];
            if (t->c_worker == 255) continue;
            uint32_t index = 0;
            const char *rt = d9_workers_describe(t->c_worker, &index);
            out_event e = {.schema = D9_SCH_WORKER_REGISTERED, .ts = c->now_ns,
                           .v = {t->c_worker, (uint64_t)t->tid, index}, .s = {rt ? rt : "?", t->name}};
            encode(c, &e);
        }
        encode_sources_segment_start(c);
    }
    if (c->write_drops_pending > c->write_drops_in_out) emit_write_drop_report(c);
}

static inline void ensure_stream(d9_collector *c) {
    if (__builtin_expect(!c->stream_open, 0)) open_stream(c);
}

static void emit_write_drop_report(d9_collector *c) {
    uint64_t n = c->write_drops_pending - c->write_drops_in_out;
    out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = c->now_ns, .v = {n, 0, 255},
                   .s = {"write_error"}};
    encode(c, &e);
    c->write_drops_in_out += n;
}

/* The event just encoded after `mark` overran the segment: write what came before, then see
 * whether the event fits after it, or rotate and encode it again in the next segment. */
static __attribute__((noinline)) void emit_overflow(d9_collector *c, const out_event *e, size_t mark) {
    d9_buf_clear(&c->scratch);
    d9_put_bytes(&c->scratch, c->out.data + mark, c->out.len - mark);
    c->out.len = mark;
    uint64_t epoch = d9_segw_epoch(c->w);
    flush_out(c);
    bool same_stream = c->stream_open && d9_segw_epoch(c->w) == epoch;
    if (same_stream && c->scratch.len <= c->room) {
        d9_put_bytes(&c->out, c->scratch.data, c->scratch.len);
    } else {
        if (same_stream) {
            d9_segw_rotate(c->w);
            writer_changed(c);
        }
        ensure_stream(c);
        encode(c, e);
    }
}

/* Encode one event, rotating first when it would not fit in the current segment. */
static ALWAYS_INLINE void emit(d9_collector *c, const out_event *e) {
    ensure_stream(c);
    size_t mark = c->out.len;
    encode(c, e);
    if (__builtin_expect(c->out.len > c->room, 0) && !(mark == 0 && d9_segw_at_segment_start(c->w)))
        emit_overflow(c, e, mark);
    if (e->schema != D9_SCH_DROPPED_EVENTS) c->out_events++; /* loss reports are not events lost */
    if (__builtin_expect(c->out.len >= FLUSH_BYTES, 0)) flush_out(c);
}

/* ---------------------------------------------------------------- decoding records */


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

static void report_ring_drops(d9_collector *c, d9_thread *t, uint64_t cumulative, uint64_t ts) {
    if (cumulative <= t->c_drops_reported) return;
    uint64_t n = cumulative - t->c_drops_reported;
    if (cumulative > t->c_drops_counted) {
        atomic_fetch_add(&c->st_ring_dropped, cumulative - t->c_drops_counted);
        t->c_drops_counted = cumulative;
    }
    t->c_drops_reported = cumulative;
    out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = ts, .v = {n, (uint64_t)t->tid, t->c_worker},
                   .s = {"buffer_full"}};
    emit(c, &e);
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
        report_ring_drops(c, t, r[1], ts);
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

static void source_event_to_out(d9_collector *c, const d9_src_event *se, out_event *e) {
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

/* A new segment: each source adds what a reader of this segment alone needs. */
static void encode_sources_segment_start(d9_collector *c) {
    d9_src_batch_reset(&c->seg_batch);
    for (size_t i = 0; i < c->source_count; i++)
        if (c->sources[i]->segment_start) c->sources[i]->segment_start(c->sources[i], &c->seg_batch);
    for (size_t i = 0; i < c->seg_batch.count; i++) {
        out_event e;
        source_event_to_out(c, &c->seg_batch.events[i], &e);
        if (e.ts < c->now_ns) e.ts = c->now_ns;
        encode(c, &e);
    }
}

bool d9_collector_add_source(d9_collector *c, d9_source *s) {
    if (c->source_count == MAX_SOURCES) return false;
    c->sources[c->source_count++] = s;
    return true;
}

/* ---------------------------------------------------------------- drain */

static bool refresh_threads(d9_collector *c) {
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

double d9_collector_drain(d9_collector *c) {
    c->write_failed = false;
    c->now_ticks = d9_clock_map_sample(&c->clock).ticks;
    c->now_ns = d9_clock_map_to_ns(&c->clock, c->now_ticks);
    if (c->clock.slope_long > 0 && __atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED))
        __atomic_store_n(&d9_schedstat_min_ticks, (uint64_t)((double)c->schedstat_res_ns / c->clock.slope_long),
                         __ATOMIC_RELAXED);
    if (!refresh_threads(c)) return 1.0;
    atomic_store(&c->st_threads, (uint32_t)c->thread_count);

    if (d9_segw_rotation_due(c->w, d9_mono_ns())) {
        flush_out(c);
        d9_segw_rotate(c->w);
        writer_changed(c);
    }

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
            source_event_to_out(c, &c->batch.events[next_src++], &e);
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

    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        atomic_store_explicit(&t->tail, t->c_end, memory_order_release);
        d9_thread_release_consumed(t, t->c_end);
        /* Drops the thread could not report itself yet (its ring stayed full). */
        report_ring_drops(c, t, atomic_load_explicit(&t->drops_total, memory_order_relaxed), c->now_ns);
    }
    if (c->write_drops_pending > c->write_drops_in_out) {
        ensure_stream(c);
        if (c->write_drops_pending > c->write_drops_in_out) emit_write_drop_report(c);
    }
    flush_out(c);
    hand_over_exited_drops(c);
    publish_writer_stats(c);
    atomic_fetch_add_explicit(&c->st_recorded, c->recorded_in_drain, memory_order_relaxed);
    c->recorded_in_drain = 0;
    free(c->threads);
    c->threads = NULL;
    c->thread_count = 0;
    d9_threads_reap();
    return fullest;
}

/* ---------------------------------------------------------------- the last words */

/* A thread about to be freed (exited, ring drained) whose drop report a failed write took:
 * its count goes on in the write_error count, so it is not lost with the thread. Drops it
 * made after the drain read its count (between that read and its exit) are reported first,
 * as its own buffer_full drops: only what a failed write took is handed over. */
static void hand_over_exited_drops(d9_collector *c) {
    bool reported = false;
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        if (!atomic_load_explicit(&t->exited, memory_order_acquire)) continue;
        uint64_t total = atomic_load_explicit(&t->drops_total, memory_order_relaxed); /* final */
        if (total > t->c_drops_reported) {
            report_ring_drops(c, t, total, c->now_ns);
            reported = true;
        }
    }
    if (reported) flush_out(c);
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        if (!atomic_load_explicit(&t->exited, memory_order_acquire)) continue;
        uint64_t total = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        if (total <= t->c_drops_written) continue;
        c->write_drops_pending += total - t->c_drops_written;
        t->c_drops_reported = t->c_drops_written = total;
    }
}

/* Loss that no event in the trace reports yet: the writes that would have said so failed. */
static bool loss_unreported(d9_collector *c) {
    if (c->write_drops_pending > 0) return true;
    for (size_t i = 0; i < c->thread_count; i++)
        if (atomic_load_explicit(&c->threads[i]->drops_total, memory_order_relaxed) > c->threads[i]->c_drops_written)
            return true;
    return false;
}

/* At stop, when the disk stayed full to the end: one last segment, alone (metadata, clock
 * sync, the drop reports), written into the room the writer set aside for it, so the trace
 * says what it lost. */
static void write_final_accounting(d9_collector *c) {
    c->threads = d9_threads_snapshot(&c->thread_count);
    if (!c->threads) c->thread_count = 0;
    if (!loss_unreported(c) || !d9_segw_has_final_reserve(c->w)) return;
    d9_buf_clear(&c->out);
    c->out_events = 0;
    c->stream_no++; /* every schema and string again: a stream of its own */
    d9_enc_header(&c->out, &c->st);
    encode_preamble(c);
    uint64_t *reported = calloc(c->thread_count ? c->thread_count : 1, sizeof *reported);
    if (!reported) return;
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        uint64_t total = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        reported[i] = total;
        if (total <= t->c_drops_written) continue;
        out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = c->now_ns,
                       .v = {total - t->c_drops_written, (uint64_t)t->tid, t->c_worker}, .s = {"buffer_full"}};
        encode(c, &e);
    }
    if (c->write_drops_pending > 0) {
        out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = c->now_ns, .v = {c->write_drops_pending, 0, 255},
                       .s = {"write_error"}};
        encode(c, &e);
    }
    if (!c->out.failed && d9_segw_write_final(c->w, c->out.data, c->out.len) == 0) {
        for (size_t i = 0; i < c->thread_count; i++)
            c->threads[i]->c_drops_reported = c->threads[i]->c_drops_written = reported[i];
        c->write_drops_pending = 0;
    }
    free(reported);
    d9_buf_clear(&c->out);
    c->stream_open = false;
}

void d9_collector_get_stats(d9_collector *c, d9_stats *out) {
    out->events_recorded = atomic_load(&c->st_recorded);
    out->events_written = atomic_load(&c->st_written);
    out->events_dropped = atomic_load(&c->st_ring_dropped) + atomic_load(&c->st_write_dropped);
    out->bytes_written = atomic_load(&c->st_bytes);
    out->write_errors = atomic_load(&c->st_write_errors);
    out->segments_sealed = atomic_load(&c->st_sealed);
    out->files_deleted = atomic_load(&c->st_deleted);
    out->threads = atomic_load(&c->st_threads);
    out->buffer_bytes = d9_ring_bytes_used();
    out->buffer_bytes_peak = d9_ring_bytes_peak();
}

/* ---------------------------------------------------------------- lifecycle */

d9_collector *d9_collector_open(const d9_collector_config *cc, char *err, size_t errlen) {
    d9_collector *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    const d9_config *cfg = cc->cfg;
    d9_segw_config sc = {
        .trace_dir = cfg->trace_dir,
        .run_id = cc->run_id,
        .max_file_size = cfg->max_file_size,
        .max_total_size = cfg->max_total_size,
        .rotation_ns = (uint64_t)cfg->rotation_secs * 1000000000ull,
    };
    c->w = d9_segw_open(&sc, err, errlen);
    if (!c->w) {
        free(c);
        return NULL;
    }
    /* Room for the drop accounting at stop when the disk is full to the end: metadata, clock
     * sync and a report per thread take a few KB. */
    d9_segw_set_final_reserve(c->w, FINAL_RESERVE_BYTES);
    d9_buf_init(&c->out);
    d9_buf_init(&c->scratch);
    d9_run_metadata_describe_process(&c->meta, cc->service, cc->run_id);
    d9_run_metadata_set(&c->meta, "clock", "%s", cc->clock_name);
    d9_run_metadata_set(&c->meta, "sources", "polls,parks,wakes,tasks");
    char resolution[64];
    snprintf(resolution, sizeof resolution, "read at most every %u us per thread", cfg->schedstat_resolution_us);
    d9_collector_note_source(c, "schedstat", cc->schedstat_active,
                             cc->schedstat_active ? resolution
                             : cfg->schedstat     ? "/proc/thread-self/schedstat cannot be read"
                                                  : "disabled by configuration");
    d9_run_metadata_set(&c->meta, "buffer_kb", "%u", cfg->buffer_kb);

    d9_clock_map_init(&c->clock);
    c->schedstat_res_ns = (uint64_t)cfg->schedstat_resolution_us * 1000u;
    c->now_ticks = c->clock.first.ticks;
    c->now_ns = c->clock.first.mono_ns;
    return c;
}

int d9_collector_start(d9_collector *c, char *err, size_t errlen) {
    /* Records left in rings by hooks racing the previous d9_stop belong to no run: skip them.
     * Threads that became workers before this start are workers from the first segment on. */
    c->threads = d9_threads_snapshot(&c->thread_count);
    for (size_t i = 0; c->threads && i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        uint64_t head = atomic_load_explicit(&t->head_pub, memory_order_acquire);
        atomic_store_explicit(&t->tail, head, memory_order_release);
        d9_thread_release_consumed(t, head);
        t->c_worker = atomic_load_explicit(&t->worker_id, memory_order_acquire);
        t->c_task = 0;
        t->c_ss_wait = D9_NS_UNKNOWN;
        uint64_t drops = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        t->c_drops_reported = t->c_drops_written = t->c_drops_counted = drops; /* earlier runs' */
    }
    /* Write the first preamble now (with those workers): an unwritable directory is the
     * caller's error, not a silent loss later. */
    ensure_stream(c);
    flush_out(c);
    free(c->threads);
    c->threads = NULL;
    c->thread_count = 0;
    publish_writer_stats(c);
    d9_segw_stats ws;
    d9_segw_get_stats(c->w, &ws);
    if (ws.write_errors) {
        snprintf(err, errlen, "cannot write trace files in %s", d9_segw_run_dir(c->w));
        return -1;
    }
    return 0;
}

d9_run_metadata *d9_collector_metadata(d9_collector *c) { return &c->meta; }

void d9_collector_note_source(d9_collector *c, const char *name, bool active, const char *detail) {
    char key[128];
    snprintf(key, sizeof key, "source.%s", name);
    d9_run_metadata_set(&c->meta, key, "%s%s%s", active ? "active" : "inactive",
                        detail && *detail ? ": " : "", detail ? detail : "");
    if (!active) return;
    for (int i = 0; i < c->meta.count; i++) {
        if (strcmp(c->meta.keys[i], "sources") != 0) continue;
        char *list = c->meta.vals[i];
        d9_run_metadata_set(&c->meta, "sources", "%s,%s", list, name);
        return;
    }
    d9_run_metadata_set(&c->meta, "sources", "%s", name);
}

void d9_collector_set_on_sealed(d9_collector *c, void (*fn)(const char *path, void *ctx), void *ctx) {
    d9_segw_set_on_sealed(c->w, fn, ctx);
}

void d9_collector_note_resized(d9_collector *c, const char *path, uint64_t new_size) {
    d9_segw_note_resized(c->w, path, new_size);
}

void d9_collector_expect_growth(d9_collector *c, uint64_t bytes) { d9_segw_set_growth_reserve(c->w, bytes); }

void d9_collector_close(d9_collector *c, d9_stats *final_stats) {
    if (!c) return;
    d9_collector_drain(c);
    for (size_t i = 0; i < c->source_count; i++) c->sources[i]->close(c->sources[i]);
    c->source_count = 0;
    flush_out(c);
    write_final_accounting(c);
    bool last_has_bytes = !d9_segw_at_segment_start(c->w);
    publish_writer_stats(c);
    if (final_stats) {
        d9_collector_get_stats(c, final_stats);
        if (last_has_bytes) final_stats->segments_sealed++; /* sealed by the close below */
    }
    d9_segw_close(c->w);
    d9_run_metadata_free(&c->meta);
    d9_string_table_free(&c->strings);
    d9_stack_table_free(&c->stacks);
    d9_src_batch_free(&c->batch);
    d9_src_batch_free(&c->seg_batch);
    d9_buf_free(&c->out);
    d9_buf_free(&c->scratch);
    free(c->loc_mark);
    free(c->cursors);
    free(c->threads);
    free(c);
}

const char *d9_collector_run_dir(d9_collector *c) { return d9_segw_run_dir(c->w); }

void d9_collector_set_dump_unwinder(d9_collector *c, d9_dump_unwind_fn fn) { c->dump_unwind = fn; }
