/* A growable byte buffer for the Parquet writer's pages and footer. A failed allocation is
 * remembered (oom) and every later append is dropped, so writers check once at the end.
 *
 * The writer's column buffers grow to megabytes a row group; grown by realloc they were
 * copied at each doubling (malloc's mmap threshold rises past them after the first free, so
 * realloc copies: ~50 instructions an event of dial9 fold). Past PQ_MAPPED_MIN bytes a buffer
 * is its own mapping and grows by mremap, which moves pages, not bytes (pq_grow). */
#ifndef D9_PARQUET_PQ_BUF_H
#define D9_PARQUET_PQ_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pq_buf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} pq_buf;

#define PQ_MAPPED_MIN ((size_t)64 << 10)

/* p (NULL, or from pq_grow with capacity old_cap bytes) with room for new_cap > old_cap
 * bytes, the first old_cap kept; NULL when out of memory (p is then unchanged). Below
 * PQ_MAPPED_MIN: realloc; from it on: a mapping of its own, grown by mremap. */
void *pq_grow(void *p, size_t old_cap, size_t new_cap);
/* Frees what pq_grow returned, of capacity cap. */
void pq_grown_free(void *p, size_t cap);

bool pq_buf_reserve(pq_buf *b, size_t more);

static inline void pq_buf_put(pq_buf *b, const void *src, size_t n) {
    if (b->len + n > b->cap && !pq_buf_reserve(b, n)) return;
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
}

static inline void pq_buf_byte(pq_buf *b, uint8_t v) { pq_buf_put(b, &v, 1); }

static inline void pq_buf_le32(pq_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    pq_buf_put(b, x, 4);
}

static inline void pq_buf_uvarint(pq_buf *b, uint64_t v) {
    uint8_t x[10];
    size_t n = 0;
    while (v >= 0x80) {
        x[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    x[n++] = (uint8_t)v;
    pq_buf_put(b, x, n);
}

static inline void pq_buf_free(pq_buf *b) {
    pq_grown_free(b->p, b->cap);
    *b = (pq_buf){0};
}

#endif
