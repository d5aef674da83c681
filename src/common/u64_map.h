/* The one hash map from 64-bit keys (task/thread/pool ids, addresses, hashes) to 64-bit values
 * in the project. Open addressing with linear probing, load <= 3/4, backward-shift deletion
 * (no tombstones, so the table follows the number of live keys); lookups are inline because
 * the decoder and the analysis call them per event. Every key is allowed, 0 and UINT64_MAX
 * included. A zeroed struct is an empty map. Iteration order is unspecified. */
#ifndef D9_COMMON_U64_MAP_H
#define D9_COMMON_U64_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_u64_map {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *used;
    size_t count;
    size_t cap; /* 0 or a power of two */
} d9_u64_map;

/* splitmix64's finalizer: ids are often sequential and addresses differ in the middle bits,
 * so every input bit must reach the low bits used as the slot. */
static inline uint64_t d9_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* A pointer to the value of key (valid until the next insertion or removal), or NULL. */
static inline uint64_t *d9_u64_map_get(const d9_u64_map *m, uint64_t key) {
    if (m->count == 0) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)d9_mix64(key) & mask;; i = (i + 1) & mask) {
        if (!m->used[i]) return NULL;
        if (m->keys[i] == key) return &m->vals[i];
    }
}

/* The value of key, inserted as init when new; NULL when out of memory. */
uint64_t *d9_u64_map_upsert(d9_u64_map *m, uint64_t key, uint64_t init);
/* Set key to val (insert or overwrite): 0, or -1 when out of memory. */
int d9_u64_map_put(d9_u64_map *m, uint64_t key, uint64_t val);
/* Remove key; true when it was there. */
bool d9_u64_map_remove(d9_u64_map *m, uint64_t key);
/* Forget every entry, keeping the memory. */
void d9_u64_map_clear(d9_u64_map *m);
void d9_u64_map_free(d9_u64_map *m);
/* Iterate: for (size_t pos = 0; d9_u64_map_next(m, &pos, &k, &v);) — no insertion or
 * removal meanwhile. */
bool d9_u64_map_next(const d9_u64_map *m, size_t *pos, uint64_t *key, uint64_t *val);

#endif
