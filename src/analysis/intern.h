/* Interned strings and stacks: each distinct value gets a dense id (0, 1, 2, ...) and one
 * stable copy, so per-event work compares ids instead of bytes and per-location/per-stack
 * tables are plain arrays indexed by id. Memory grows with the number of distinct values
 * (spawn locations, symbol names, call stacks), not with the number of events. */
#ifndef D9_ANALYSIS_INTERN_H
#define D9_ANALYSIS_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "common/arena.h" /* the copies: a few large chunks instead of one malloc per string */

typedef struct d9a_strings {
    d9_arena arena;
    const char **ptrs; /* by id, NUL-terminated */
    uint32_t *lens;
    uint64_t *hashes;
    uint32_t count, cap;
    uint32_t *slots;   /* id + 1, 0 = empty; table_cap is a power of two */
    size_t table_cap;
} d9a_strings;

/* The id of s[0..len) (interned on first sight), or UINT32_MAX when out of memory. */
uint32_t d9a_strings_intern(d9a_strings *t, const char *s, size_t len);
static inline const char *d9a_strings_get(const d9a_strings *t, uint32_t id) {
    return id < t->count ? t->ptrs[id] : NULL;
}
void d9a_strings_free(d9a_strings *t);

typedef struct d9a_stacks {
    d9_arena arena;
    const uint64_t **addrs; /* by id, leaf first */
    uint32_t *lens;
    uint64_t *hashes;
    uint32_t count, cap;
    uint32_t *slots;
    size_t table_cap;
} d9a_stacks;

/* The id of the call stack addrs[0..n) (leaf first), or UINT32_MAX when out of memory. */
uint32_t d9a_stacks_intern(d9a_stacks *t, const uint64_t *addrs, uint32_t n);
static inline const uint64_t *d9a_stacks_get(const d9a_stacks *t, uint32_t id, uint32_t *n) {
    *n = id < t->count ? t->lens[id] : 0;
    return id < t->count ? t->addrs[id] : NULL;
}
void d9a_stacks_free(d9a_stacks *t);

uint64_t d9a_hash_bytes(const void *p, size_t n);

#endif
