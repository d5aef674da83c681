/* A set of 64-bit integers (worker ids, thread ids, pending pool ids): the u64 map with the
 * values unused, so there is one probing implementation. A zeroed struct is an empty set. */
#ifndef D9_COMMON_U64_SET_H
#define D9_COMMON_U64_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/u64_map.h"

typedef struct d9_u64_set {
    d9_u64_map map;
} d9_u64_set;

static inline bool d9_u64_set_has(const d9_u64_set *s, uint64_t v) {
    return d9_u64_map_get(&s->map, v) != NULL;
}
static inline size_t d9_u64_set_count(const d9_u64_set *s) { return s->map.count; }

/* 1 added, 0 already there, -1 out of memory (v is not in the set). */
int d9_u64_set_add(d9_u64_set *s, uint64_t v);
/* Iterate: for (size_t pos = 0; d9_u64_set_next(s, &pos, &v);) — unspecified order. */
bool d9_u64_set_next(const d9_u64_set *s, size_t *pos, uint64_t *v);
/* The members in increasing order, malloc'ed (free it); NULL when empty or out of memory. */
uint64_t *d9_u64_set_sorted(const d9_u64_set *s);
void d9_u64_set_clear(d9_u64_set *s); /* keeps the memory */
void d9_u64_set_free(d9_u64_set *s);

#endif
