#include "parquet/pq_buf.h"

#include <sys/mman.h>

void *pq_grow(void *p, size_t old_cap, size_t new_cap) {
    if (new_cap < PQ_MAPPED_MIN) return realloc(p, new_cap);
    if (old_cap >= PQ_MAPPED_MIN) {
        void *q = mremap(p, old_cap, new_cap, MREMAP_MAYMOVE);
        return q == MAP_FAILED ? NULL : q;
    }
    void *q = mmap(NULL, new_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return NULL;
    if (old_cap) memcpy(q, p, old_cap); /* once, below PQ_MAPPED_MIN */
    free(p);
    return q;
}

void pq_grown_free(void *p, size_t cap) {
    if (!p) return;
    if (cap >= PQ_MAPPED_MIN) munmap(p, cap);
    else free(p);
}

bool pq_buf_reserve(pq_buf *b, size_t more) {
    if (b->oom) return false;
    size_t need = b->len + more;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    uint8_t *p = pq_grow(b->p, b->cap, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}
