#include "core/stack_table.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_frames(const uint64_t *f, uint32_t n) {
    uint64_t h = 1469598103934665603ull ^ n;
    for (uint32_t i = 0; i < n; i++) h = (h ^ f[i]) * 1099511628211ull, h ^= h >> 29;
    return h;
}

void d9_stack_table_free(d9_stack_table *t) {
    for (size_t i = 0; i < t->hs.cap; i++) {
        d9_stack_entry *e = t->hs.slots[i];
        if (!e) continue;
        free(e->frames);
        free(e);
    }
    free(t->hs.slots);
    memset(t, 0, sizeof *t);
}

d9_stack_entry *d9_stack_table_get(d9_stack_table *t, const uint64_t *frames, uint32_t count) {
    return d9_stack_table_get_tagged(t, frames, count, 0);
}

d9_stack_entry *d9_stack_table_get_tagged(d9_stack_table *t, const uint64_t *frames, uint32_t count, uint8_t tag) {
    if (!d9_hash_slots_reserve(&t->hs, offsetof(d9_stack_entry, hash))) return NULL;
    uint64_t h = hash_frames(frames, count) ^ ((uint64_t)tag << 56);
    size_t mask = t->hs.cap - 1, j = h & mask;
    for (d9_stack_entry *e; (e = t->hs.slots[j]); j = (j + 1) & mask)
        if (e->hash == h && e->count == count && e->tag == tag &&
            (count == 0 || memcmp(e->frames, frames, count * sizeof *frames) == 0))
            return e;
    d9_stack_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->frames = malloc((count ? count : 1) * sizeof *frames);
    if (!e->frames) {
        free(e);
        return NULL;
    }
    if (count) memcpy(e->frames, frames, count * sizeof *frames);
    e->count = count;
    e->tag = tag;
    e->hash = h;
    e->index = (uint32_t)t->hs.count++;
    t->hs.slots[j] = e;
    return e;
}
