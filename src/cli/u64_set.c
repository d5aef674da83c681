/* Open-addressing set of u64 (see u64_set.h). */
#include "cli/u64_set.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t v, size_t cap) {
    return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static int grow(d9_u64_set *s) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint64_t *slots = malloc(cap * sizeof *slots);
    bool *used = calloc(cap, sizeof *used);
    if (!slots || !used) {
        free(slots);
        free(used);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->used[i]) continue;
        size_t j = slot_of(s->slots[i], cap);
        while (used[j]) j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
        used[j] = true;
    }
    free(s->slots);
    free(s->used);
    s->slots = slots;
    s->used = used;
    s->cap = cap;
    return 0;
}

bool d9_u64_set_has(const d9_u64_set *s, uint64_t v) {
    if (!s->count) return false;
    for (size_t i = slot_of(v, s->cap); s->used[i]; i = (i + 1) & (s->cap - 1))
        if (s->slots[i] == v) return true;
    return false;
}

int d9_u64_set_add(d9_u64_set *s, uint64_t v) {
    if (d9_u64_set_has(s, v)) return 0;
    if ((s->count + 1) * 2 > s->cap && grow(s) != 0) return -1;
    size_t i = slot_of(v, s->cap);
    while (s->used[i]) i = (i + 1) & (s->cap - 1);
    s->slots[i] = v;
    s->used[i] = true;
    s->count++;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t *d9_u64_set_sorted(const d9_u64_set *s) {
    if (!s->count) return NULL;
    uint64_t *out = malloc(s->count * sizeof *out);
    if (!out) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->used[i]) out[n++] = s->slots[i];
    qsort(out, n, sizeof *out, cmp_u64);
    return out;
}

void d9_u64_set_free(d9_u64_set *s) {
    free(s->slots);
    free(s->used);
    memset(s, 0, sizeof *s);
}
