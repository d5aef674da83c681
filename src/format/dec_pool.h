/* The string and stack pools of one stream: pool id (u32) -> bytes or addresses, in an open
 * addressing hash table whose entries point into a per-stream arena. */
#ifndef D9_FORMAT_DEC_POOL_H
#define D9_FORMAT_DEC_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_pool_entry {
    const void *data; /* never NULL for a used slot: NULL marks an empty one */
    uint32_t id;
    uint32_t len;     /* bytes (strings) or addresses (stacks) */
} d9_pool_entry;

typedef struct d9_pool {
    d9_pool_entry *slots;
    uint32_t count;
    uint32_t mask;  /* slots - 1 (slots is a power of two) */
    uint32_t shift; /* 32 - log2(slots), for Fibonacci hashing */
    /* The ids below dense_cap again, indexed by id (data NULL: not defined): writers number
     * a stream's pool entries from 1 up, so most look-ups are one load, no hashing. Grown
     * only while the ids it covers stay about half defined. */
    d9_pool_entry *dense;
    uint32_t dense_cap;
} d9_pool;

static inline uint32_t d9_pool_hash(uint32_t id, uint32_t shift) {
    return (uint32_t)(id * 2654435769u) >> shift;
}

static inline const d9_pool_entry *d9_pool_find(const d9_pool *p, uint32_t id) {
    if (id < p->dense_cap) return p->dense[id].data ? &p->dense[id] : NULL;
    if (p->count == 0) return NULL;
    uint32_t i = d9_pool_hash(id, p->shift);
    for (;;) {
        const d9_pool_entry *e = &p->slots[i];
        if (!e->data) return NULL;
        if (e->id == id) return e;
        i = (i + 1) & p->mask;
    }
}

void d9_pool_init(d9_pool *p);
/* Set id -> (data, len); a later definition of the same id replaces the earlier one.
 * Returns 1 when the id is new, 0 when it replaced one, -1 when out of memory. */
int d9_pool_put(d9_pool *p, uint32_t id, const void *data, uint32_t len);
/* Empty the pool, keeping the table when it is small. */
void d9_pool_clear(d9_pool *p);
void d9_pool_free(d9_pool *p);


#endif
