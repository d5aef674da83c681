#include "analysis/records.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DIGIT_BITS 11
#define DIGITS (1u << DIGIT_BITS)

/* LSD radix sort of keys src[0..n) on 11-bit digits, only over the bits that differ between
 * them (a window spans seconds: 3 or 4 passes); stable, so equal keys keep their arrival
 * order. tmp has room for n. Returns where the sorted keys are (src or tmp). */
static d9a_rec_key *radix(d9a_rec_key *src, d9a_rec_key *tmp, size_t n) {
    uint64_t all_or = 0, all_and = ~0ull, prev = 0;
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = src[i].key;
        all_or |= k;
        all_and &= k;
        if (k < prev) sorted = false;
        prev = k;
    }
    if (sorted || n < 2) return src; /* a recorder that merges by time: one check */
    uint64_t differ = all_or ^ all_and;
    unsigned lo = (unsigned)__builtin_ctzll(differ), hi = 64u - (unsigned)__builtin_clzll(differ);
    size_t count[DIGITS]; /* 16 KiB */
    d9a_rec_key *dst = tmp;
    for (unsigned shift = lo; shift < hi; shift += DIGIT_BITS) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++) count[(src[i].key >> shift) & (DIGITS - 1)]++;
        size_t pos = 0;
        for (unsigned d = 0; d < DIGITS; d++) {
            size_t c = count[d];
            count[d] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++) dst[count[(src[i].key >> shift) & (DIGITS - 1)]++] = src[i];
        d9a_rec_key *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

void d9a_rec_buf_sort(d9a_rec_buf *b) {
    size_t kept = b->nsorted, m = b->n - kept;
    if (m == 0) return;
    /* sort the new records' keys, using the free tail of `order` as scratch */
    d9a_rec_key *fresh = b->tmp;
    for (size_t i = 0; i < m; i++) {
        const d9a_rec *r = &b->recs[kept + i];
        fresh[i] = (d9a_rec_key){d9a_rec_sort_key(r->ts, r->kind), (uint32_t)(kept + i), 0};
    }
    d9a_rec_key *s = radix(fresh, b->order + kept, m);
    if (s != fresh) memcpy(fresh, s, m * sizeof *fresh);
    /* merge: the old run moves to the back of `order`, the merge writes from the front and
     * never overtakes it; on equal keys the old (earlier) record goes first */
    d9a_rec_key *o = b->order;
    memmove(o + m, o, kept * sizeof *o);
    size_t i = 0, j = 0, w = 0;
    while (i < m && j < kept) {
        if (o[m + j].key <= fresh[i].key) o[w++] = o[m + j++];
        else o[w++] = fresh[i++];
    }
    while (i < m) o[w++] = fresh[i++];
    /* the rest of the old run is already in place */
    b->nsorted = b->n;
}

void d9a_rec_buf_drop_first(d9a_rec_buf *b, size_t k) {
    if (k >= b->n) {
        b->n = b->nsorted = 0;
        return;
    }
    /* compact the records in arrival order; the kept keys stay sorted, with new indexes */
    for (size_t i = 0; i < k; i++) b->recs[b->order[i].idx].kind = 0xff;
    uint32_t *remap = (uint32_t *)b->tmp; /* tmp holds 4 x n uint32 */
    size_t w = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->recs[i].kind == 0xff) continue;
        remap[i] = (uint32_t)w;
        b->recs[w++] = b->recs[i];
    }
    for (size_t i = k; i < b->n; i++) {
        d9a_rec_key key = b->order[i];
        key.idx = remap[key.idx];
        b->order[i - k] = key;
    }
    b->n = w;
    b->nsorted = w;
}

int d9a_rec_buf_grow(d9a_rec_buf *b) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    if (b->window && cap > b->window) cap = b->window > b->n ? b->window : b->n + 1;
    d9a_rec *p = realloc(b->recs, cap * sizeof *p);
    if (!p) return -1;
    b->recs = p;
    d9a_rec_key *o = realloc(b->order, cap * sizeof *o);
    if (!o) return -1;
    b->order = o;
    d9a_rec_key *t = realloc(b->tmp, cap * sizeof *t);
    if (!t) return -1;
    b->tmp = t;
    b->cap = cap;
    return 0;
}

void d9a_rec_buf_free(d9a_rec_buf *b) {
    free(b->recs);
    free(b->order);
    free(b->tmp);
    memset(b, 0, sizeof *b);
}
