/* Pool tables and id sets (see dec_pool.h). */
#include "format/dec_pool.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MIN_SLOTS 64u
#define POOL_KEEP_SLOTS 4096u   /* clear() keeps tables up to this size, frees bigger ones */
#define DENSE_MIN 64u
#define DENSE_MAX (1u << 20)    /* ids the dense table covers at most (16 MiB) */

void d9_pool_init(d9_pool *p) { memset(p, 0, sizeof *p); }

static int pool_resize(d9_pool *p, uint32_t nslots) {
    d9_pool_entry *slots = calloc(nslots, sizeof *slots);
    if (!slots) return -1;
    uint32_t shift = 32;
    for (uint32_t n = nslots; n > 1; n >>= 1) shift--;
    for (uint32_t i = 0; p->slots && i <= p->mask; i++) {
        d9_pool_entry *e = &p->slots[i];
        if (!e->data) continue;
        uint32_t j = d9_pool_hash(e->id, shift);
        while (slots[j].data) j = (j + 1) & (nslots - 1);
        slots[j] = *e;
    }
    free(p->slots);
    p->slots = slots;
    p->mask = nslots - 1;
    p->shift = shift;
    return 0;
}

static int put_hashed(d9_pool *p, uint32_t id, const void *data, uint32_t len);

/* Cover `id` by the dense table when that keeps it about half full; false: it stays out (the
 * hash table has it), or out of memory (the same). */
static bool dense_cover(d9_pool *p, uint32_t id) {
    if (id >= DENSE_MAX || id > 2 * p->count + DENSE_MIN) return false;
    uint32_t cap = p->dense_cap ? p->dense_cap : DENSE_MIN;
    while (cap <= id) cap *= 2;
    d9_pool_entry *dense = realloc(p->dense, (size_t)cap * sizeof *dense);
    if (!dense) return false;
    memset(dense + p->dense_cap, 0, (size_t)(cap - p->dense_cap) * sizeof *dense);
    for (uint32_t i = 0; p->slots && i <= p->mask; i++) /* the ids it covers now, defined before */
        if (p->slots[i].data && p->slots[i].id >= p->dense_cap && p->slots[i].id < cap)
            dense[p->slots[i].id] = p->slots[i];
    p->dense = dense;
    p->dense_cap = cap;
    return true;
}

int d9_pool_put(d9_pool *p, uint32_t id, const void *data, uint32_t len) {
    int r = put_hashed(p, id, data, len);
    if (r >= 0 && (id < p->dense_cap || dense_cover(p, id))) p->dense[id] = (d9_pool_entry){data, id, len};
    return r;
}

static int put_hashed(d9_pool *p, uint32_t id, const void *data, uint32_t len) {
    /* Keep the load at most 1/2 so probes stay short. */
    if (!p->slots || (p->count + 1) * 2 > p->mask + 1) {
        uint32_t n = p->slots ? (p->mask + 1) * 2 : POOL_MIN_SLOTS;
        if (n == 0 || pool_resize(p, n) != 0) return -1;
    }
    uint32_t i = d9_pool_hash(id, p->shift);
    for (;;) {
        d9_pool_entry *e = &p->slots[i];
        if (!e->data) {
            e->data = data;
            e->id = id;
            e->len = len;
            p->count++;
            return 1;
        }
        if (e->id == id) {
            e->data = data;
            e->len = len;
            return 0;
        }
        i = (i + 1) & p->mask;
    }
}

void d9_pool_clear(d9_pool *p) {
    if (p->dense_cap > POOL_KEEP_SLOTS) {
        free(p->dense);
        p->dense = NULL;
        p->dense_cap = 0;
    } else if (p->count && p->dense) {
        memset(p->dense, 0, (size_t)p->dense_cap * sizeof *p->dense);
    }
    if (!p->slots) return;
    if (p->mask + 1 > POOL_KEEP_SLOTS) {
        free(p->slots);
        p->slots = NULL;
        p->count = p->mask = p->shift = 0;
        return;
    }
    if (p->count) memset(p->slots, 0, (size_t)(p->mask + 1) * sizeof *p->slots);
    p->count = 0;
}

void d9_pool_free(d9_pool *p) {
    free(p->slots);
    free(p->dense);
    memset(p, 0, sizeof *p);
}
