/* u64 -> u32 hash map (see u64_map.h). */
#include "export/u64_map.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t cap) {
    key ^= key >> 33; /* addresses share their low and high bits: mix before masking */
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

bool d9_u64_map_get(const d9_u64_map *m, uint64_t key, uint32_t *value) {
    if (!m->cap) return false;
    for (size_t i = slot_of(key, m->cap); m->used[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            *value = m->values[i];
            return true;
        }
    return false;
}

static int grow(d9_u64_map *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys);
    uint32_t *values = malloc(cap * sizeof *values);
    bool *used = calloc(cap, sizeof *used);
    if (!keys || !values || !used) {
        free(keys);
        free(values);
        free(used);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t j = slot_of(m->keys[i], cap);
        while (used[j]) j = (j + 1) & (cap - 1);
        used[j] = true;
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    free(m->used);
    m->keys = keys;
    m->values = values;
    m->used = used;
    m->cap = cap;
    return 0;
}

int d9_u64_map_put(d9_u64_map *m, uint64_t key, uint32_t value) {
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0) return -1;
    size_t i = slot_of(key, m->cap);
    for (; m->used[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            m->values[i] = value;
            return 0;
        }
    m->used[i] = true;
    m->keys[i] = key;
    m->values[i] = value;
    m->count++;
    return 0;
}

void d9_u64_map_free(d9_u64_map *m) {
    free(m->keys);
    free(m->values);
    free(m->used);
    memset(m, 0, sizeof *m);
}
