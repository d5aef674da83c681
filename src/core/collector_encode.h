/* The hot half of the encoder, inline in the merge loop so each record kind's encoding is
 * specialised where the kind is known: the stream prerequisites seen once per stream (schema,
 * location string) are checked with one compare, room is reserved once per event and fields
 * go in with raw stores. Everything rarer lives in collector_encode.c. */
#ifndef D9_CORE_COLLECTOR_ENCODE_H
#define D9_CORE_COLLECTOR_ENCODE_H

#include "core/collector_state.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

static inline void need_schema(d9_collector *c, uint16_t id, const d9_schema_def *def) {
    if (__builtin_expect(c->schema_mark[id] == c->stream_no, 1)) return;
    d9_enc_schema(&c->out, id, def);
    c->schema_mark[id] = c->stream_no;
}

static inline void need_builtin(d9_collector *c, uint16_t id) { need_schema(c, id, &d9_builtin_schemas[id]); }

uint32_t d9_col_need_loc_slow(d9_collector *c, uint32_t id);
static inline uint32_t need_loc(d9_collector *c, uint32_t id) {
    if (__builtin_expect(id < c->loc_mark_len && c->loc_mark[id] == c->stream_no, 1)) return id;
    return d9_col_need_loc_slow(c, id);
}

static inline uint8_t sat8(uint64_t v) { return v > 255 ? 255 : (uint8_t)v; }

/* The largest core event (a park: three varints, a byte and a u32) after its frame header. */
#define CORE_FIELDS_MAX 40
/* The most bytes one hook record's event takes: a timestamp reset, the frame, the fields. */
#define HOOK_EVENT_MAX (D9_RAW_EVENT_MAX + CORE_FIELDS_MAX)

/* Start a core event: its schema is declared, room for the worst case is reserved once, so the
 * fields go in with raw stores. NULL when memory ran out (the buffer is marked failed). */
static inline uint8_t *begin_core(d9_collector *c, const out_event *e) {
    need_builtin(c, e->schema);
    uint8_t *p = d9_buf_reserve(&c->out, D9_RAW_EVENT_MAX + CORE_FIELDS_MAX);
    return p ? d9_raw_event(p, &c->st, e->schema, e->ts) : NULL;
}

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
        p = d9_raw_varint(p, e->v[2]);
        if (e->schema == D9_SCH_WORKER_UNPARK) p = d9_raw_varint(p, e->v[3]);
        p = d9_raw_u32(p, (uint32_t)e->v[4]);
        d9_buf_commit(b, p);
        break;
    case D9_SCH_TASK_OBJECT:
        if (!(p = begin_core(c, e))) break;
        p = d9_raw_varint(p, e->v[0]);
        d9_buf_commit(b, d9_raw_varint(p, e->v[1]));
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

/* Every other event (sources, drops, workers, custom types). */
void d9_col_encode_other(d9_collector *c, const out_event *e);

static ALWAYS_INLINE void encode(d9_collector *c, const out_event *e) {
    if (!encode_core(c, e)) d9_col_encode_other(c, e);
}

static inline void ensure_stream(d9_collector *c) {
    if (__builtin_expect(!c->stream_open, 0)) d9_col_open_stream(c);
}

void d9_col_emit_overflow(d9_collector *c, const out_event *e, size_t mark);

/* Encode one event, rotating first when it would not fit in the current segment. */
static ALWAYS_INLINE void emit(d9_collector *c, const out_event *e) {
    ensure_stream(c);
    size_t mark = c->out.len;
    encode(c, e);
    if (__builtin_expect(c->out.len > c->room, 0) && !(mark == 0 && d9_segw_at_segment_start(c->w)))
        d9_col_emit_overflow(c, e, mark);
    if (e->schema != D9_SCH_DROPPED_EVENTS && e->schema != D9_SCH_UPLOAD_LOSS)
        c->out_events++; /* loss reports are not events lost */
    if (__builtin_expect(c->out.len >= FLUSH_BYTES, 0)) d9_col_flush_out(c);
}

#endif
