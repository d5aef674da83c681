/* The dictionary of a mostly-one-value column chunk (sparse_dict.h). */
#include "parquet/sparse_dict.h"

#include <stdlib.h>

static size_t count_equal(const int64_t *v, size_t n, int64_t x) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += v[i] == x;
    return k;
}

static uint64_t mix(int64_t x) {
    uint64_t h = (uint64_t)x * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static int reserve(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

int pq_sparse_dict_build(pq_sparse_dict *d, const int64_t *v, size_t n, uint32_t max_entries) {
    if (n == 0 || max_entries == 0) return 0;
    int64_t common = 0;
    size_t k = count_equal(v, n, 0);
    if (k * 8 < n * 7 && v[0] != 0) {
        common = v[0];
        k = count_equal(v, n, common);
    }
    if (k * 8 < n * 7 || n - k >= max_entries) return 0; /* the rest might all differ */
    size_t rest = n - k;
    size_t nslots = 16;
    while (nslots < rest * 2 + 2) nslots *= 2;
    if (reserve((void **)&d->index, &d->index_cap, n, sizeof *d->index) != 0 ||
        reserve((void **)&d->entries, &d->entries_cap, rest + 1, sizeof *d->entries) != 0)
        return -1;
    if (nslots > d->nslots) {
        free(d->slots);
        d->slots = malloc(nslots * sizeof *d->slots);
        if (!d->slots) {
            d->nslots = 0;
            return -1;
        }
        d->nslots = nslots;
    }
    for (size_t i = 0; i < nslots; i++) d->slots[i] = 0;
    d->entries[0] = common;
    uint32_t ne = 1;
    for (size_t i = 0; i < n; i++) {
        int64_t x = v[i];
        if (x == common) {
            d->index[i] = 0;
            continue;
        }
        size_t s = mix(x) & (nslots - 1);
        for (;; s = (s + 1) & (nslots - 1)) {
            uint64_t e = d->slots[s];
            if (!e) {
                d->slots[s] = (uint64_t)ne << 32 | 1;
                d->entries[ne] = x;
                d->index[i] = ne++;
                break;
            }
            if (d->entries[e >> 32] == x) {
                d->index[i] = (uint32_t)(e >> 32);
                break;
            }
        }
    }
    d->nentries = ne;
    return 1;
}

void pq_sparse_dict_free(pq_sparse_dict *d) {
    free(d->entries);
    free(d->index);
    free(d->slots);
    *d = (pq_sparse_dict){0};
}
