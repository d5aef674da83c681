/* Sorting an integer dictionary (dict_order.h). */
#include "parquet/dict_order.h"

#include <stdlib.h>
#include <string.h>

struct pq_dict_key {
    int64_t value;
    uint32_t old;
};

static int by_value(const void *a, const void *b) {
    int64_t x = ((const struct pq_dict_key *)a)->value, y = ((const struct pq_dict_key *)b)->value;
    return (x > y) - (x < y);
}

static bool reserve(pq_dict_order *o, size_t n) {
    if (n <= o->cap) return true;
    struct pq_dict_key *k = realloc(o->keys, n * sizeof *k);
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
    for (size_t i = 0; i < n; i++) {
        if (width == 4) {
            int32_t v;
            memcpy(&v, entries + i * 4, 4);
            o->keys[i].value = v;
        } else {
            memcpy(&o->keys[i].value, entries + i * 8, 8);
        }
        o->keys[i].old = (uint32_t)i;
    }
    qsort(o->keys, n, sizeof *o->keys, by_value);
    for (size_t i = 0; i < n; i++) {
        o->rank[o->keys[i].old] = (uint32_t)i;
        if (width == 4) {
            int32_t v = (int32_t)o->keys[i].value;
            memcpy(entries + i * 4, &v, 4);
        } else {
            memcpy(entries + i * 8, &o->keys[i].value, 8);
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
