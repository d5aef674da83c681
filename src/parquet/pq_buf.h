/* A growable byte buffer for the Parquet writer's pages and footer. A failed allocation is
 * remembered (oom) and every later append is dropped, so writers check once at the end. */
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
    free(b->p);
    *b = (pq_buf){0};
}

#endif
