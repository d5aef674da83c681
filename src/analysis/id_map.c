#include "analysis/id_map.h"

#include <stdlib.h>
#include <string.h>

static int grow(d9a_id_map *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys);
    uint32_t *vals = malloc(cap * sizeof *vals);
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
        size_t j = (size_t)d9a_mix64(m->keys[i]) & mask;
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

int d9a_id_map_put(d9a_id_map *m, uint64_t key, uint32_t val) {
    if ((m->count + 1) * 4 > m->cap * 3 && grow(m) != 0) return -1; /* load <= 3/4 */
    size_t mask = m->cap - 1;
    size_t i = (size_t)d9a_mix64(key) & mask;
    while (m->used[i]) {
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->used[i] = 1;
    m->keys[i] = key;
    m->vals[i] = val;
    m->count++;
    return 0;
}

bool d9a_id_map_remove(d9a_id_map *m, uint64_t key) {
    if (m->count == 0) return false;
    size_t mask = m->cap - 1;
    size_t i = (size_t)d9a_mix64(key) & mask;
    while (m->used[i] && m->keys[i] != key) i = (i + 1) & mask;
    if (!m->used[i]) return false;
    /* Backward shift: move later members of the probe run into the hole when their home
     * position allows, so lookups never stop early at it. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = (size_t)d9a_mix64(m->keys[j]) & mask;
        /* j may move to hole when home is not cyclically within (hole, j] */
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

void d9a_id_map_clear(d9a_id_map *m) {
    if (m->count && m->used) memset(m->used, 0, m->cap);
    m->count = 0;
}

void d9a_id_map_free(d9a_id_map *m) {
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}
