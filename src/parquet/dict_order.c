/* Sorting an integer dictionary (dict_order.h): an LSD radix sort of the values' bytes, the
 * bytes that are the same in every entry skipped (durations: three or four passes of eight),
 * as qsort's compare calls cost ~30 instructions an entry and a byte pass ~10. */
#include "parquet/dict_order.h"

#include <stdlib.h>
#include <string.h>

struct pq_dict_key {
    uint64_t key; /* the value with its sign bit flipped: unsigned order is signed order */
    uint32_t old;
};

static bool reserve(pq_dict_order *o, size_t n) {
    if (n <= o->cap) return true;
    struct pq_dict_key *k = realloc(o->keys, 2 * n * sizeof *k); /* the keys and the pass's copy */
    if (!k) return false;
    o->keys = k;
    uint32_t *r = realloc(o->rank, n * sizeof *r);
    if (!r) return false;
    o->rank = r;
    o->cap = n;
    return true;
}

bool pq_dict_sort_ints(pq_dict_order *o, uint8_t *entries, size_t n, size_t width, uint32_t *index, size_t nindex) {
    if (n < 2) return true;
    if (!reserve(o, n)) return false;
    struct pq_dict_key *a = o->keys, *b = o->keys + n;
    uint64_t all_or = 0, all_and = ~0ull;
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        if (width == 4) {
            int32_t v32;
            memcpy(&v32, entries + i * 4, 4);
            v = v32;
        } else {
            memcpy(&v, entries + i * 8, 8);
        }
        uint64_t k = (uint64_t)v ^ (1ull << 63);
        a[i] = (struct pq_dict_key){k, (uint32_t)i};
        all_or |= k;
        all_and &= k;
    }
    uint64_t differ = all_or ^ all_and; /* the bits that are not the same in every entry */
    for (unsigned d = 0; d < 8; d++) {
        if (!((differ >> (8 * d)) & 255)) continue;
        uint32_t count[256] = {0};
        for (size_t i = 0; i < n; i++) count[(a[i].key >> (8 * d)) & 255]++;
        uint32_t at = 0;
        for (unsigned x = 0; x < 256; x++) {
            uint32_t c = count[x];
            count[x] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++) b[count[(a[i].key >> (8 * d)) & 255]++] = a[i];
        struct pq_dict_key *t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < n; i++) {
        o->rank[a[i].old] = (uint32_t)i;
        int64_t v = (int64_t)(a[i].key ^ (1ull << 63));
        if (width == 4) {
            int32_t v32 = (int32_t)v;
            memcpy(entries + i * 4, &v32, 4);
        } else {
            memcpy(entries + i * 8, &v, 8);
        }
    }
    for (size_t i = 0; i < nindex; i++) index[i] = o->rank[index[i]];
    return true;
}

void pq_dict_order_free(pq_dict_order *o) {
    free(o->keys);
    free(o->rank);
    *o = (pq_dict_order){0};
}
