/* Thrift compact protocol encoder (see thrift_compact.h). */
#include "parquet/thrift_compact.h"

#include <string.h>

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

void pq_tc_init(pq_tc *t, pq_buf *out) {
    memset(t, 0, sizeof *t);
    t->out = out;
}

static void field(pq_tc *t, int16_t id, uint8_t type) {
    int16_t *last = &t->last[t->depth];
    int delta = id - *last;
    if (delta > 0 && delta <= 15) {
        pq_buf_byte(t->out, (uint8_t)(delta << 4 | type));
    } else {
        pq_buf_byte(t->out, type);
        pq_buf_uvarint(t->out, zigzag(id));
    }
    *last = id;
}

void pq_tc_i32(pq_tc *t, int16_t id, int32_t v) {
    field(t, id, PQ_TC_I32);
    pq_buf_uvarint(t->out, zigzag(v));
}

void pq_tc_i64(pq_tc *t, int16_t id, int64_t v) {
    field(t, id, PQ_TC_I64);
    pq_buf_uvarint(t->out, zigzag(v));
}

void pq_tc_bool(pq_tc *t, int16_t id, bool v) { field(t, id, v ? PQ_TC_TRUE : PQ_TC_FALSE); }

void pq_tc_binary(pq_tc *t, int16_t id, const void *p, uint32_t n) {
    field(t, id, PQ_TC_BINARY);
    pq_buf_uvarint(t->out, n);
    pq_buf_put(t->out, p, n);
}

void pq_tc_string(pq_tc *t, int16_t id, const char *s) { pq_tc_binary(t, id, s, (uint32_t)strlen(s)); }

void pq_tc_struct_begin(pq_tc *t, int16_t id) {
    if (id > 0) field(t, id, PQ_TC_STRUCT);
    if (t->depth + 1 < PQ_TC_DEPTH) t->depth++;
    else t->out->oom = true; /* deeper than any Parquet structure: refuse */
    t->last[t->depth] = 0;
}

void pq_tc_struct_end(pq_tc *t) {
    pq_buf_byte(t->out, 0); /* STOP */
    if (t->depth > 0) t->depth--;
}

void pq_tc_list(pq_tc *t, int16_t id, uint8_t elem_type, uint32_t count) {
    field(t, id, PQ_TC_LIST);
    if (count < 15) {
        pq_buf_byte(t->out, (uint8_t)(count << 4 | elem_type));
    } else {
        pq_buf_byte(t->out, (uint8_t)(0xf0 | elem_type));
        pq_buf_uvarint(t->out, count);
    }
}

void pq_tc_elem_i32(pq_tc *t, int32_t v) { pq_buf_uvarint(t->out, zigzag(v)); }

void pq_tc_elem_string(pq_tc *t, const char *s) {
    size_t n = strlen(s);
    pq_buf_uvarint(t->out, n);
    pq_buf_put(t->out, s, n);
}
