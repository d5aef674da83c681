#include "symbols/u64_table.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t cap) {
    key ^= key >> 33; /* murmur3's finalizer: addresses differ mostly in the middle bits */
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static bool rehash(d9_u64_table *m, size_t cap) {
    uint64_t *keys = malloc(cap * sizeof *keys), *vals = malloc(cap * sizeof *vals);
    uint8_t *used = calloc(cap, 1);
    if (!keys || !vals || !used) {
        free(keys);
        free(vals);
        free(used);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t s = slot_of(m->keys[i], cap);
        while (used[s]) s = (s + 1) & (cap - 1);
        used[s] = 1;
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = keys;
    m->vals = vals;
    m->used = used;
    m->cap = cap;
    return true;
}

uint64_t *d9_u64_table_get(const d9_u64_table *m, uint64_t key) {
    if (!m->cap) return NULL;
    for (size_t s = slot_of(key, m->cap);; s = (s + 1) & (m->cap - 1)) {
        if (!m->used[s]) return NULL;
        if (m->keys[s] == key) return &m->vals[s];
    }
}

uint64_t *d9_u64_table_upsert(d9_u64_table *m, uint64_t key, uint64_t init) {
    uint64_t *v = d9_u64_table_get(m, key);
    if (v) return v;
    if ((m->count + 1) * 4 > m->cap * 3 && !rehash(m, m->cap ? m->cap * 2 : 64)) return NULL;
    size_t s = slot_of(key, m->cap);
    while (m->used[s]) s = (s + 1) & (m->cap - 1);
    m->used[s] = 1;
    m->keys[s] = key;
    m->vals[s] = init;
    m->count++;
    return &m->vals[s];
}

void d9_u64_table_clear(d9_u64_table *m) {
    if (m->cap && m->count) memset(m->used, 0, m->cap);
    m->count = 0;
}

void d9_u64_table_free(d9_u64_table *m) {
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

bool d9_u64_table_next(const d9_u64_table *m, size_t *pos, uint64_t *key, uint64_t *val) {
    for (; *pos < m->cap; (*pos)++) {
        if (!m->used[*pos]) continue;
        *key = m->keys[*pos];
        *val = m->vals[*pos];
        (*pos)++;
        return true;
    }
    return false;
}
