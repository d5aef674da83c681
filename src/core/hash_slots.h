/* Open-addressing slots of pointers to entries that carry their own 64-bit hash: the shared
 * skeleton of the collector's string and stack tables (load factor ≤ 1/2, linear probing). */
#ifndef D9_CORE_HASH_SLOTS_H
#define D9_CORE_HASH_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct d9_hash_slots {
    void **slots;
    size_t cap, count; /* cap is 0 or a power of two */
} d9_hash_slots;

static inline uint64_t d9_hash_slots_hash_of(const void *entry, size_t hash_offset) {
    uint64_t h;
    memcpy(&h, (const char *)entry + hash_offset, sizeof h);
    return h;
}

/* Room for one more entry, doubling when needed. False on no memory. */
static inline bool d9_hash_slots_reserve(d9_hash_slots *hs, size_t hash_offset) {
    if ((hs->count + 1) * 2 <= hs->cap) return true;
    size_t cap = hs->cap ? hs->cap * 2 : 64;
    void **slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < hs->cap; i++) {
        if (!hs->slots[i]) continue;
        size_t j = d9_hash_slots_hash_of(hs->slots[i], hash_offset) & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = hs->slots[i];
    }
    free(hs->slots);
    hs->slots = slots;
    hs->cap = cap;
    return true;
}

#endif
