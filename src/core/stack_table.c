#include "core/stack_table.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_frames(const uint64_t *f, uint32_t n) {
    uint64_t h = 1469598103934665603ull ^ n;
    for (uint32_t i = 0; i < n; i++) h = (h ^ f[i]) * 1099511628211ull, h ^= h >> 29;
    return h;
}

void d9_stack_table_free(d9_stack_table *t) {
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        free(t->slots[i]->frames);
        free(t->slots[i]);
    }
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static bool grow(d9_stack_table *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    d9_stack_entry **slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < t->cap; i++) {
        d9_stack_entry *e = t->slots[i];
        if (!e) continue;
        size_t j = e->hash & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = e;
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return true;
}

d9_stack_entry *d9_stack_table_get(d9_stack_table *t, const uint64_t *frames, uint32_t count) {
    if ((t->count + 1) * 2 > t->cap && !grow(t)) return NULL;
    uint64_t h = hash_frames(frames, count);
    size_t j = h & (t->cap - 1);
    for (; t->slots[j]; j = (j + 1) & (t->cap - 1)) {
        d9_stack_entry *e = t->slots[j];
        if (e->hash == h && e->count == count && memcmp(e->frames, frames, count * sizeof *frames) == 0)
            return e;
    }
    d9_stack_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->frames = malloc((count ? count : 1) * sizeof *frames);
    if (!e->frames) {
        free(e);
        return NULL;
    }
    if (count) memcpy(e->frames, frames, count * sizeof *frames);
    e->count = count;
    e->hash = h;
    e->index = (uint32_t)t->count++;
    t->slots[j] = e;
    return e;
}
