/* The Thrift compact protocol, write side only: what Parquet's footer (FileMetaData) and page
 * headers need. Structs nest up to PQ_TC_DEPTH deep; field ids are written as deltas from the
 * previous field of the same struct, as the protocol wants. */
#ifndef D9_PARQUET_THRIFT_COMPACT_H
#define D9_PARQUET_THRIFT_COMPACT_H

#include <stdbool.h>
#include <stdint.h>

#include "parquet/pq_buf.h"

enum {
    PQ_TC_TRUE = 1,
    PQ_TC_FALSE = 2,
    PQ_TC_BYTE = 3,
    PQ_TC_I16 = 4,
    PQ_TC_I32 = 5,
    PQ_TC_I64 = 6,
    PQ_TC_DOUBLE = 7,
    PQ_TC_BINARY = 8,
    PQ_TC_LIST = 9,
    PQ_TC_STRUCT = 12,
};

#define PQ_TC_DEPTH 16

typedef struct pq_tc {
    pq_buf *out;
    int depth;
    int16_t last[PQ_TC_DEPTH]; /* last field id per open struct */
} pq_tc;

void pq_tc_init(pq_tc *t, pq_buf *out);
void pq_tc_i32(pq_tc *t, int16_t id, int32_t v);
void pq_tc_i64(pq_tc *t, int16_t id, int64_t v);
void pq_tc_bool(pq_tc *t, int16_t id, bool v);
void pq_tc_binary(pq_tc *t, int16_t id, const void *p, uint32_t n);
void pq_tc_string(pq_tc *t, int16_t id, const char *s);
/* A struct field (id > 0) or a struct element of a list (id 0): then fields, then end. */
void pq_tc_struct_begin(pq_tc *t, int16_t id);
void pq_tc_struct_end(pq_tc *t);
/* A list field's header; its elements follow (pq_tc_elem_* or pq_tc_struct_begin(t, 0)). */
void pq_tc_list(pq_tc *t, int16_t id, uint8_t elem_type, uint32_t count);
void pq_tc_elem_i32(pq_tc *t, int32_t v);
void pq_tc_elem_string(pq_tc *t, const char *s);

#endif
