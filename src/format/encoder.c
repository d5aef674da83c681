/* Encoder of the dial9 trace format (little-endian fixed widths, LEB128 varints). */
#include "format/encoder.h"

#include <stdlib.h>
#include <string.h>

#include "format/wire.h"

void d9_buf_init(d9_buf *b) { memset(b, 0, sizeof *b); }

void d9_buf_free(d9_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

uint8_t *d9_buf_grow(d9_buf *b, size_t n) {
    if (b->failed) return NULL;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) { b->failed = true; return NULL; }
            cap *= 2;
        }
        uint8_t *p = realloc(b->data, cap);
        if (!p) { b->failed = true; return NULL; }
        b->data = p;
        b->cap = cap;
    }
    return b->data + b->len;
}

void d9_put_bytes(d9_buf *b, const void *src, size_t n) {
    uint8_t *p = d9_buf_reserve(b, n);
    if (!p) return;
    if (n) memcpy(p, src, n);
    b->len += n;
}

static void put_le(d9_buf *b, uint64_t v, int width) {
    uint8_t *p = d9_buf_reserve(b, (size_t)width);
    if (!p) return;
    for (int i = 0; i < width; i++) p[i] = (uint8_t)(v >> (8 * i));
    b->len += (size_t)width;
}

void d9_put_u8(d9_buf *b, uint8_t v) { put_le(b, v, 1); }
void d9_put_u16(d9_buf *b, uint16_t v) { put_le(b, v, 2); }
void d9_put_u24(d9_buf *b, uint32_t v) { put_le(b, v, 3); }
void d9_put_u32(d9_buf *b, uint32_t v) { put_le(b, v, 4); }
void d9_put_u64(d9_buf *b, uint64_t v) { put_le(b, v, 8); }

void d9_put_varint(d9_buf *b, uint64_t v) {
    uint8_t *p = d9_buf_reserve(b, 10);
    if (!p) return;
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    b->len += n;
}

void d9_put_lstring(d9_buf *b, const char *s, size_t n) {
    if (n > UINT32_MAX) n = UINT32_MAX;
    d9_put_u32(b, (uint32_t)n);
    d9_put_bytes(b, s, n);
}

static void put_name16(d9_buf *b, const char *s) {
    size_t n = strlen(s);
    if (n > UINT16_MAX) n = UINT16_MAX;
    d9_put_u16(b, (uint16_t)n);
    d9_put_bytes(b, s, n);
}

void d9_enc_header(d9_buf *b, d9_stream_state *st) {
    static const uint8_t hdr[D9_HEADER_SIZE] = {D9_MAGIC0, D9_MAGIC1, D9_MAGIC2, D9_MAGIC3,
                                                D9_FORMAT_VERSION};
    d9_put_bytes(b, hdr, sizeof hdr);
    st->ts_base = 0;
}

void d9_enc_schema(d9_buf *b, uint16_t type_id, const d9_schema_def *def) {
    d9_put_u8(b, D9_FRAME_SCHEMA);
    d9_put_u16(b, type_id);
    put_name16(b, def->name);
    d9_put_u8(b, def->has_timestamp ? 1 : 0);
    d9_put_u16(b, def->field_count);
    for (uint16_t i = 0; i < def->field_count; i++) {
        put_name16(b, def->fields[i].name);
        d9_put_u8(b, def->fields[i].type);
    }
}

void d9_enc_timestamp_reset(d9_buf *b, d9_stream_state *st, uint64_t ts_ns) {
    d9_put_u8(b, D9_FRAME_TIMESTAMP_RESET);
    d9_put_u64(b, ts_ns);
    st->ts_base = ts_ns;
}

void d9_enc_event(d9_buf *b, d9_stream_state *st, uint16_t type_id, uint64_t ts_ns) {
    uint8_t *p = d9_buf_reserve(b, D9_RAW_EVENT_MAX);
    if (p) d9_buf_commit(b, d9_raw_event(p, st, type_id, ts_ns));
}

void d9_enc_event_untimed(d9_buf *b, uint16_t type_id) {
    d9_put_u8(b, D9_FRAME_EVENT);
    d9_put_u16(b, type_id);
}

static void pool_begin(d9_buf *b, d9_pool_frame *pf, uint8_t tag) {
    d9_put_u8(b, tag);
    pf->count_pos = b->len;
    pf->count = 0;
    d9_put_u32(b, 0);
}

void d9_enc_string_pool_begin(d9_buf *b, d9_pool_frame *pf) {
    pool_begin(b, pf, D9_FRAME_STRING_POOL);
}

void d9_enc_stack_pool_begin(d9_buf *b, d9_pool_frame *pf) {
    pool_begin(b, pf, D9_FRAME_STACK_POOL);
}

void d9_enc_string_pool_entry(d9_buf *b, d9_pool_frame *pf, uint32_t id, const char *s,
                              size_t n) {
    d9_put_u32(b, id);
    d9_put_lstring(b, s, n);
    pf->count++;
}

void d9_enc_stack_pool_entry(d9_buf *b, d9_pool_frame *pf, uint32_t id, const uint64_t *frames,
                             uint32_t n) {
    d9_put_u32(b, id);
    d9_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++) d9_put_u64(b, frames[i]);
    pf->count++;
}

static void patch_u32(d9_buf *b, size_t pos, uint32_t v) {
    if (b->failed || pos + 4 > b->len) return;
    for (int i = 0; i < 4; i++) b->data[pos + (size_t)i] = (uint8_t)(v >> (8 * i));
}

void d9_enc_pool_end(d9_buf *b, d9_pool_frame *pf) {
    if (pf->count == 0) {
        if (!b->failed && b->len == pf->count_pos + 4) b->len = pf->count_pos - 1;
        return;
    }
    patch_u32(b, pf->count_pos, pf->count);
}

void d9_enc_string_map_begin(d9_buf *b, d9_pool_frame *map) {
    map->count_pos = b->len;
    map->count = 0;
    d9_put_u32(b, 0);
}

void d9_enc_string_map_entry(d9_buf *b, d9_pool_frame *map, const char *k, const char *v) {
    d9_put_lstring(b, k, strlen(k));
    d9_put_lstring(b, v, strlen(v));
    map->count++;
}

void d9_enc_string_map_end(d9_buf *b, d9_pool_frame *map) { patch_u32(b, map->count_pos, map->count); }
