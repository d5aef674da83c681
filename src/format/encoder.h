/* Encoder of the dial9 trace format: a growable byte buffer plus one writer per frame kind.
 * Used by the recorder's background thread, by `dial9 symbolize` and by tests that build
 * traces by hand. Not for hot paths: it may allocate. */
#ifndef D9_FORMAT_ENCODER_H
#define D9_FORMAT_ENCODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/wire.h"

typedef struct d9_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed: contents are incomplete, callers must discard */
} d9_buf;

void d9_buf_init(d9_buf *b);
void d9_buf_free(d9_buf *b);
static inline void d9_buf_clear(d9_buf *b) { b->len = 0; b->failed = false; }
/* Make room for `n` more bytes; returns a pointer to them or NULL (and sets failed). */
uint8_t *d9_buf_grow(d9_buf *b, size_t n);
static inline uint8_t *d9_buf_reserve(d9_buf *b, size_t n) {
    if (__builtin_expect(!b->failed && b->cap - b->len >= n, 1)) return b->data + b->len;
    return d9_buf_grow(b, n);
}

void d9_put_u8(d9_buf *b, uint8_t v);
void d9_put_u16(d9_buf *b, uint16_t v);
void d9_put_u24(d9_buf *b, uint32_t v);
void d9_put_u32(d9_buf *b, uint32_t v);
void d9_put_u64(d9_buf *b, uint64_t v);
void d9_put_varint(d9_buf *b, uint64_t v);
void d9_put_bytes(d9_buf *b, const void *p, size_t n);
/* A String/Bytes field value: u32 length then the bytes. */
void d9_put_lstring(d9_buf *b, const char *s, size_t n);
/* Raw writers for hot encoders: reserve the worst case once (d9_buf_reserve), write through the
 * returned pointer with these, then d9_buf_commit. No bounds checks: the reservation is them. */
static inline uint8_t *d9_raw_u8(uint8_t *p, uint8_t v) {
    *p = v;
    return p + 1;
}
static inline uint8_t *d9_raw_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
    return p + 4;
}
static inline uint8_t *d9_raw_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}
/* An optional Varint (type | D9_FT_OPTIONAL): a presence byte, then the value if present.
 * D9_ABSENT stands for "not measured" in the writers' value slots; no real value reaches it. */
#define D9_ABSENT UINT64_MAX
static inline __attribute__((always_inline)) uint8_t *d9_raw_opt_varint(uint8_t *p, uint64_t v) {
    if (v == D9_ABSENT) {
        *p = 0;
        return p + 1;
    }
    *p = 1;
    return d9_raw_varint(p + 1, v);
}
static inline void d9_buf_commit(d9_buf *b, const uint8_t *end) { b->len = (size_t)(end - b->data); }
static inline size_t d9_varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

/* A schema: name, whether events carry a timestamp, and typed fields (D9_FT_*). */
typedef struct d9_schema_field {
    const char *name;
    uint8_t type;
} d9_schema_field;

typedef struct d9_schema_def {
    const char *name;
    bool has_timestamp;
    uint16_t field_count;
    const d9_schema_field *fields;
} d9_schema_def;

/* Per-stream encoder state that the wire format makes the writer track. */
typedef struct d9_stream_state {
    uint64_t ts_base;
} d9_stream_state;

void d9_enc_header(d9_buf *b, d9_stream_state *st);
void d9_enc_schema(d9_buf *b, uint16_t type_id, const d9_schema_def *def);
/* Start an event frame: writes a timestamp-reset frame first when the delta from the stream's
 * base does not fit in 24 bits (or goes backwards). The caller then appends field values. */
void d9_enc_event(d9_buf *b, d9_stream_state *st, uint16_t type_id, uint64_t ts_ns);
void d9_enc_event_untimed(d9_buf *b, uint16_t type_id);
/* The worst case of d9_raw_event: a timestamp reset frame and the event frame's header. */
#define D9_RAW_EVENT_MAX 15
/* d9_enc_event through a reserved pointer: returns where the event's fields go. */
static inline uint8_t *d9_raw_event(uint8_t *p, d9_stream_state *st, uint16_t type_id, uint64_t ts_ns) {
    if (__builtin_expect(ts_ns < st->ts_base || ts_ns - st->ts_base > D9_TS_DELTA_MAX, 0)) {
        *p++ = D9_FRAME_TIMESTAMP_RESET;
        for (int i = 0; i < 8; i++) *p++ = (uint8_t)(ts_ns >> (8 * i));
        st->ts_base = ts_ns;
    }
    uint32_t delta = (uint32_t)(ts_ns - st->ts_base);
    p[0] = D9_FRAME_EVENT;
    p[1] = (uint8_t)type_id;
    p[2] = (uint8_t)(type_id >> 8);
    p[3] = (uint8_t)delta;
    p[4] = (uint8_t)(delta >> 8);
    p[5] = (uint8_t)(delta >> 16);
    st->ts_base = ts_ns;
    return p + 6;
}
void d9_enc_timestamp_reset(d9_buf *b, d9_stream_state *st, uint64_t ts_ns);

/* String and stack pools: batch entries into one frame (cheaper than one frame each). */
typedef struct d9_pool_frame {
    size_t count_pos; /* where the u32 count lives in the buffer */
    uint32_t count;
} d9_pool_frame;
void d9_enc_string_pool_begin(d9_buf *b, d9_pool_frame *pf);
void d9_enc_string_pool_entry(d9_buf *b, d9_pool_frame *pf, uint32_t id, const char *s, size_t n);
void d9_enc_stack_pool_begin(d9_buf *b, d9_pool_frame *pf);
void d9_enc_stack_pool_entry(d9_buf *b, d9_pool_frame *pf, uint32_t id, const uint64_t *frames,
                             uint32_t n);
/* Patch the count; an empty frame is removed again. */
void d9_enc_pool_end(d9_buf *b, d9_pool_frame *pf);

/* StringMap value: count then (key, value) pairs. */
void d9_enc_string_map_begin(d9_buf *b, d9_pool_frame *map);
void d9_enc_string_map_entry(d9_buf *b, d9_pool_frame *map, const char *k, const char *v);
void d9_enc_string_map_end(d9_buf *b, d9_pool_frame *map);

#endif
