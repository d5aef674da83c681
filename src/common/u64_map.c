/* Open-addressing u64 -> u64 map (see u64_map.h). */
#include "common/u64_map.h"

#include <stdlib.h>
#include <string.h>

#define MIN_CAP 64

static int grow(d9_u64_map *m) {
    if (m->cap > SIZE_MAX / 2 / sizeof *m->keys) return -1;
    size_t cap = m->cap ? m->cap * 2 : MIN_CAP;
    uint64_t *keys = malloc(cap * sizeof *keys), *vals = malloc(cap * sizeof *vals);
    uint8_t *used = calloc(cap, 1);
    if (!keys || !vals || !used) {
        free(keys);
        free(vals);
        free(used);
        return -1;
    }
    size_t mask = cap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t j = (size_t)d9_mix64(m->keys[i]) & mask;
        while (used[j]) j = (j + 1) & mask;
        used[j] = 1;
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = keys;
    m->vals = vals;
    m->used = used;
    m->cap = cap;
    return 0;
}

uint64_t *d9_u64_map_upsert(d9_u64_map *m, uint64_t key, uint64_t init) {
    uint64_t *v = d9_u64_map_get(m, key);
    if (v) return v;
    if ((m->count + 1) * 4 > m->cap * 3 && grow(m) != 0) return NULL;
    size_t mask = m->cap - 1, i = (size_t)d9_mix64(key) & mask;
    while (m->used[i]) i = (i + 1) & mask;
    m->used[i] = 1;
    m->keys[i] = key;
    m->vals[i] = init;
    m->count++;
    return &m->vals[i];
}

int d9_u64_map_put(d9_u64_map *m, uint64_t key, uint64_t val) {
    uint64_t *v = d9_u64_map_upsert(m, key, val);
    if (!v) return -1;
    *v = val;
    return 0;
}

bool d9_u64_map_remove(d9_u64_map *m, uint64_t key) {
    if (m->count == 0) return false;
    size_t mask = m->cap - 1;
    size_t i = (size_t)d9_mix64(key) & mask;
    while (m->used[i] && m->keys[i] != key) i = (i + 1) & mask;
    if (!m->used[i]) return false;
    /* Backward shift: move later members of the probe run into the hole when their home slot
     * allows, so lookups never stop early at it. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = (size_t)d9_mix64(m->keys[j]) & mask;
        /* j stays when its home is cyclically within (hole, j] */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays) continue;
        m->keys[hole] = m->keys[j];
        m->vals[hole] = m->vals[j];
        hole = j;
    }
    m->used[hole] = 0;
    m->count--;
    return true;
}

void d9_u64_map_clear(d9_u64_map *m) {
    if (m->count) memset(m->used, 0, m->cap);
    m->count = 0;
}

void d9_u64_map_free(d9_u64_map *m) {
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

bool d9_u64_map_next(const d9_u64_map *m, size_t *pos, uint64_t *key, uint64_t *val) {
    for (; *pos < m->cap; (*pos)++) {
        if (!m->used[*pos]) continue;
        *key = m->keys[*pos];
        *val = m->vals[*pos];
        (*pos)++;
        return true;
    }
    return false;
}
