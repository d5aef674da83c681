/* A batch of INT64 values copied into a column's buffer with their smallest and largest value
 * (the column chunk's statistics) found on the way, four at a time where the CPU has AVX2:
 * ~2 instructions a value against ~8 for the scalar compare-and-move loop and a memcpy. Every
 * INT64 and TIMESTAMP column of a fold passes each value through here once. */
#ifndef D9_PARQUET_COPY_MINMAX_H
#define D9_PARQUET_COPY_MINMAX_H

#include <stddef.h>
#include <stdint.h>

/* dst[0..n) = src[0..n) (not overlapping); *lo and *hi (given: the bounds so far) widened to
 * take every value. */
void pq_copy_minmax_i64(int64_t *dst, const int64_t *src, size_t n, int64_t *lo, int64_t *hi);

#endif
