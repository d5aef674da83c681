#include "analysis/intern.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/u64_map.h"

uint64_t d9a_hash_bytes(const void *p, size_t n) {
    /* FNV-1a over 8-byte words, finished with a mixer: fast enough and well spread */
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        b += 8;
        n -= 8;
    }
    uint64_t w = 0;
    if (n) memcpy(&w, b, n);
    h = (h ^ w) * 0x100000001b3ull;
    return d9_mix64(h);
}

/* ---- the shared open-addressing table of ids ---- */

typedef bool (*same_fn)(const void *t, uint32_t id, const void *key, size_t len);

static int table_grow(uint32_t **slots, size_t *cap, const uint64_t *hashes) {
    size_t ncap = *cap ? *cap * 2 : 256;
    uint32_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) return -1;
    for (size_t i = 0; i < *cap; i++) {
        uint32_t v = (*slots)[i];
        if (!v) continue;
        size_t j = (size_t)hashes[v - 1] & (ncap - 1);
        while (ns[j]) j = (j + 1) & (ncap - 1);
        ns[j] = v;
    }
    free(*slots);
    *slots = ns;
    *cap = ncap;
    return 0;
}

/* Find key; returns its id or UINT32_MAX, with *slot_out the empty slot where it goes. */
static uint32_t table_find(const uint32_t *slots, size_t cap, const uint64_t *hashes,
                           uint64_t h, same_fn same, const void *t, const void *key, size_t len,
                           size_t *slot_out) {
    size_t mask = cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t v = slots[i];
        if (!v) {
            *slot_out = i;
            return UINT32_MAX;
        }
        if (hashes[v - 1] == h && same(t, v - 1, key, len)) return v - 1;
    }
}

static int grow_arrays(void **a, void **b, void **c, uint32_t *cap, size_t sa, size_t sb,
                       size_t sc) {
    uint32_t ncap = *cap ? *cap * 2 : 64;
    void *na = realloc(*a, ncap * sa);
    if (!na) return -1;
    *a = na;
    void *nb = realloc(*b, ncap * sb);
    if (!nb) return -1;
    *b = nb;
    void *nc = realloc(*c, ncap * sc);
    if (!nc) return -1;
    *c = nc;
    *cap = ncap;
    return 0;
}

/* ---- strings ---- */

static bool same_string(const void *tp, uint32_t id, const void *key, size_t len) {
    const d9a_strings *t = tp;
    return t->lens[id] == len && (len == 0 || memcmp(t->ptrs[id], key, len) == 0);
}

uint32_t d9a_strings_intern(d9a_strings *t, const char *s, size_t len) {
    if (len > UINT32_MAX - 1) return UINT32_MAX;
    uint64_t h = d9a_hash_bytes(s, len);
    if (((size_t)t->count + 1) * 2 > t->table_cap &&
        table_grow(&t->slots, &t->table_cap, t->hashes) != 0)
        return UINT32_MAX;
    size_t slot;
    uint32_t id = table_find(t->slots, t->table_cap, t->hashes, h, same_string, t, s, len, &slot);
    if (id != UINT32_MAX) return id;
    if (t->count == UINT32_MAX - 1) return UINT32_MAX;
    if (t->count == t->cap &&
        grow_arrays((void **)&t->ptrs, (void **)&t->lens, (void **)&t->hashes, &t->cap,
                    sizeof *t->ptrs, sizeof *t->lens, sizeof *t->hashes) != 0)
        return UINT32_MAX;
    char *copy = d9_arena_alloc(&t->arena, len + 1, 1);
    if (!copy) return UINT32_MAX;
    if (len) memcpy(copy, s, len);
    copy[len] = 0;
    id = t->count++;
    t->ptrs[id] = copy;
    t->lens[id] = (uint32_t)len;
    t->hashes[id] = h;
    t->slots[slot] = id + 1;
    return id;
}

void d9a_strings_free(d9a_strings *t) {
    d9_arena_free(&t->arena);
    free(t->ptrs);
    free(t->lens);
    free(t->hashes);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ---- stacks ---- */

static bool same_stack(const void *tp, uint32_t id, const void *key, size_t len) {
    const d9a_stacks *t = tp;
    return t->lens[id] == len && (len == 0 || memcmp(t->addrs[id], key, len * sizeof(uint64_t)) == 0);
}

uint32_t d9a_stacks_intern(d9a_stacks *t, const uint64_t *addrs, uint32_t n) {
    uint64_t h = d9a_hash_bytes(addrs, (size_t)n * sizeof *addrs);
    if (((size_t)t->count + 1) * 2 > t->table_cap &&
        table_grow(&t->slots, &t->table_cap, t->hashes) != 0)
        return UINT32_MAX;
    size_t slot;
    uint32_t id = table_find(t->slots, t->table_cap, t->hashes, h, same_stack, t, addrs, n, &slot);
    if (id != UINT32_MAX) return id;
    if (t->count == UINT32_MAX - 1) return UINT32_MAX;
    if (t->count == t->cap &&
        grow_arrays((void **)&t->addrs, (void **)&t->lens, (void **)&t->hashes, &t->cap,
                    sizeof *t->addrs, sizeof *t->lens, sizeof *t->hashes) != 0)
        return UINT32_MAX;
    uint64_t *copy = d9_arena_alloc(&t->arena, (size_t)n * sizeof *copy + 1, sizeof(uint64_t));
    if (!copy) return UINT32_MAX;
    if (n) memcpy(copy, addrs, (size_t)n * sizeof *copy);
    id = t->count++;
    t->addrs[id] = copy;
    t->lens[id] = n;
    t->hashes[id] = h;
    t->slots[slot] = id + 1;
    return id;
}

void d9a_stacks_free(d9a_stacks *t) {
    d9_arena_free(&t->arena);
    free(t->addrs);
    free(t->lens);
    free(t->hashes);
    free(t->slots);
    memset(t, 0, sizeof *t);
}
