/* Pool tables and id sets (see dec_pool.h). */
#include "format/dec_pool.h"

#include <stdlib.h>
#include <string.h>

#define POOL_MIN_SLOTS 64u
#define POOL_KEEP_SLOTS 4096u   /* clear() keeps tables up to this size, frees bigger ones */

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

int d9_pool_put(d9_pool *p, uint32_t id, const void *data, uint32_t len) {
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
    if (!p->slots) return;
    if (p->mask + 1 > POOL_KEEP_SLOTS) {
        free(p->slots);
        memset(p, 0, sizeof *p);
        return;
    }
    if (p->count) memset(p->slots, 0, (size_t)(p->mask + 1) * sizeof *p->slots);
    p->count = 0;
}

void d9_pool_free(d9_pool *p) {
    free(p->slots);
    memset(p, 0, sizeof *p);
}
