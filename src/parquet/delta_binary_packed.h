/* Parquet's DELTA_BINARY_PACKED encoding of INT32 / INT64 values: the first value, then per
 * block of 128 the smallest delta and four miniblocks of 32 deltas bit-packed above it. Sorted
 * or slowly moving values (timestamps) take a few bits each instead of 8 bytes. */
#ifndef D9_PARQUET_DELTA_BINARY_PACKED_H
#define D9_PARQUET_DELTA_BINARY_PACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parquet/pq_buf.h"

/* bytes: each miniblock's width rounded up to whole bytes (the format lets a width be any
 * bound on its deltas), for pages zstd's match search compresses next: the packed deltas then
 * lie on byte boundaries, where repeating deltas are matches (task ids). Without it each width
 * is the least that holds its deltas: fewer bytes, which zstd's entropy coding alone codes
 * smaller than whole-byte ones (pq_writer.c). */
void pq_delta_encode(pq_buf *out, const int64_t *v, size_t n, bool bytes);
void pq_delta_encode_i32(pq_buf *out, const int32_t *v, size_t n, bool bytes);

#endif
