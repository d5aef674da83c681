#include "parquet/pq_buf.h"

bool pq_buf_reserve(pq_buf *b, size_t more) {
    if (b->oom) return false;
    size_t need = b->len + more;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}
