/* Parquet's DELTA_BINARY_PACKED encoding of INT32 / INT64 values: the first value, then per
 * block of 128 the smallest delta and four miniblocks of 32 deltas bit-packed above it. Sorted
 * or slowly moving values (timestamps) take a few bits each instead of 8 bytes. */
#ifndef D9_PARQUET_DELTA_BINARY_PACKED_H
#define D9_PARQUET_DELTA_BINARY_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "parquet/pq_buf.h"

void pq_delta_encode(pq_buf *out, const int64_t *v, size_t n);
void pq_delta_encode_i32(pq_buf *out, const int32_t *v, size_t n);

#endif
