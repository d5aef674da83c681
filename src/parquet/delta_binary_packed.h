/* Parquet's DELTA_BINARY_PACKED encoding of INT32 / INT64 values: the first value, then per
 * block of 128 the smallest delta and four miniblocks of 32 deltas bit-packed above it. Sorted
 * or slowly moving values (timestamps) take a few bits each instead of 8 bytes. */
#ifndef D9_PARQUET_DELTA_BINARY_PACKED_H
#define D9_PARQUET_DELTA_BINARY_PACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parquet/pq_buf.h"

/* slack: a miniblock's width is rounded up to whole bytes when that adds at most `slack` bits
 * a delta (the format lets a width be any bound on its deltas), else it is the least that
 * holds its deltas. PQ_DELTA_WHOLE_BYTES for pages zstd's match search compresses next: the
 * deltas lie on byte boundaries, where repeating deltas are matches (task ids). PQ_DELTA_EXACT
 * for pages stored as they are. PQ_DELTA_NEAR_BYTES for pages zstd only entropy codes: a delta
 * whose width is a few bits short of whole bytes keeps its byte structure for zstd's Huffman
 * literals (mostly-zero high bytes), one far short of them is packed exactly (fewer bytes in
 * and out; docs/fleet-tables.md "Measured"). */
#define PQ_DELTA_EXACT 0u
#define PQ_DELTA_NEAR_BYTES 3u
#define PQ_DELTA_WHOLE_BYTES 7u
void pq_delta_encode(pq_buf *out, const int64_t *v, size_t n, unsigned slack);
void pq_delta_encode_i32(pq_buf *out, const int32_t *v, size_t n, unsigned slack);

#endif
