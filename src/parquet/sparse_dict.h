/* A column chunk of 64-bit integers (128 or more: a smaller one gains nothing) most of which are one value (a poll's attribution parts:
 * lock, I/O, sleep... are 0 on nearly every row; a constant column), as a dictionary and its
 * indices: the RLE/bit-packed hybrid then writes each run of the common value in a few bytes,
 * where PLAIN wrote 8 bytes a row and left zstd to find the runs again. */
#ifndef D9_PARQUET_SPARSE_DICT_H
#define D9_PARQUET_SPARSE_DICT_H

#include <stddef.h>
#include <stdint.h>

typedef struct pq_sparse_dict {
    int64_t *entries;   /* entries[0] is the common value */
    uint32_t nentries;
    uint32_t *index;    /* per value */
    uint64_t *slots;    /* open addressing: entry << 32 | (slot used), scratch */
    size_t entries_cap, index_cap, nslots;
} pq_sparse_dict;

/* Builds d from v[0..n) when at least 7 of 8 values are one value (0, or v[0]) and the rest
 * have at most max_entries - 1 distinct values: 1. 0 when not worth it, -1 out of memory.
 * d's buffers are reused from call to call. */
int pq_sparse_dict_build(pq_sparse_dict *d, const int64_t *v, size_t n, uint32_t max_entries);
void pq_sparse_dict_free(pq_sparse_dict *d);

#endif
