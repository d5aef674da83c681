/* Parquet's RLE / bit-packed hybrid encoding of small unsigned integers (definition levels,
 * dictionary indices): runs of 8 or more equal values become one RLE run, the rest bit-packed
 * groups of 8. No length prefix: callers add one where the format wants it. */
#ifndef D9_PARQUET_RLE_HYBRID_H
#define D9_PARQUET_RLE_HYBRID_H

#include <stddef.h>
#include <stdint.h>

#include "parquet/pq_buf.h"

/* Bits needed for values 0..max_value (0 for 0). */
unsigned pq_bit_width(uint32_t max_value);
/* Values v[0..n) (each < 2^bit_width; bit_width 0..32) appended to out. */
void pq_rle_encode(pq_buf *out, const uint32_t *v, size_t n, unsigned bit_width);
/* The same for one byte per value (definition levels). */
void pq_rle_encode_u8(pq_buf *out, const uint8_t *v, size_t n, unsigned bit_width);

#endif
