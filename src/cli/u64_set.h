/* A growable set of 64-bit integers (distinct worker ids, thread ids, ...) that can list its
 * members in order. */
#ifndef D9_CLI_U64_SET_H
#define D9_CLI_U64_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_u64_set {
    uint64_t *slots;
    bool *used;
    size_t count;
    size_t cap; /* a power of two, or 0 */
} d9_u64_set;

/* 0 added or already present, -1 out of memory */
int d9_u64_set_add(d9_u64_set *s, uint64_t v);
bool d9_u64_set_has(const d9_u64_set *s, uint64_t v);
/* The members in increasing order, malloc'ed (free it); NULL when empty or out of memory. */
uint64_t *d9_u64_set_sorted(const d9_u64_set *s);
void d9_u64_set_free(d9_u64_set *s);

#endif
