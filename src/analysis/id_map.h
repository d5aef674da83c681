/* A hash map from 64-bit ids (task ids, thread ids, pool ids, addresses) to 32-bit values
 * (usually an index into an array of per-id state). Open addressing with linear probing and
 * backward-shift deletion, so removing entries (terminated tasks) leaves no tombstones and the
 * map's size follows the number of live ids. */
#ifndef D9_ANALYSIS_ID_MAP_H
#define D9_ANALYSIS_ID_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9a_id_map {
    uint64_t *keys;
    uint32_t *vals;
    uint8_t *used;
    size_t count;
    size_t cap; /* a power of two, or 0 */
} d9a_id_map;

static inline uint64_t d9a_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* The value stored for key, or NULL. */
static inline uint32_t *d9a_id_map_get(const d9a_id_map *m, uint64_t key) {
    if (m->count == 0) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)d9a_mix64(key) & mask;; i = (i + 1) & mask) {
        if (!m->used[i]) return NULL;
        if (m->keys[i] == key) return &m->vals[i];
    }
}

/* Set key to val (insert or overwrite). 0, or -1 when out of memory. */
int d9a_id_map_put(d9a_id_map *m, uint64_t key, uint32_t val);
/* Remove key; true when it was there. */
bool d9a_id_map_remove(d9a_id_map *m, uint64_t key);
/* Forget every entry (keeps the memory). */
void d9a_id_map_clear(d9a_id_map *m);
void d9a_id_map_free(d9a_id_map *m);

#endif
