#include "analysis/topn.h"

#include <stdlib.h>
#include <string.h>

int d9a_topn_init(d9a_topn *t, size_t cap, size_t elem_size) {
    memset(t, 0, sizeof *t);
    t->cap = cap;
    t->elem_size = elem_size;
    if (cap == 0) return 0;
    t->items = calloc(cap, elem_size);
    t->keys = calloc(cap, sizeof *t->keys);
    t->seq = calloc(cap, sizeof *t->seq);
    t->gen = calloc(cap, sizeof *t->gen);
    if (!t->items || !t->keys || !t->seq || !t->gen) {
        d9a_topn_free(t);
        return -1;
    }
    return 0;
}

void d9a_topn_free(d9a_topn *t) {
    free(t->items);
    free(t->keys);
    free(t->seq);
    free(t->gen);
    memset(t, 0, sizeof *t);
}

/* The kept element that goes first when replacing: the smallest key, the latest among ties. */
static bool less_kept(const d9a_topn *t, size_t a, size_t b) {
    if (t->keys[a] != t->keys[b]) return t->keys[a] < t->keys[b];
    return t->seq[a] > t->seq[b];
}

long d9a_topn_place(d9a_topn *t, uint64_t key, bool *replaced) {
    if (!d9a_topn_wants(t, key)) return -1;
    size_t slot;
    bool was_used = t->n == t->cap;
    if (!was_used) slot = t->n++;
    else slot = t->min_slot;
    t->keys[slot] = key;
    t->seq[slot] = t->next_seq++;
    t->gen[slot]++;
    if (replaced) *replaced = was_used;
    if (t->n == t->cap) {
        size_t m = 0;
        for (size_t i = 1; i < t->n; i++)
            if (less_kept(t, i, m)) m = i;
        t->min_slot = m;
    }
    return (long)slot;
}

void d9a_topn_order(const d9a_topn *t, size_t *order) {
    for (size_t i = 0; i < t->n; i++) order[i] = i;
    /* insertion sort: n is small */
    for (size_t i = 1; i < t->n; i++) {
        size_t v = order[i], j = i;
        while (j > 0 && less_kept(t, order[j - 1], v)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}
