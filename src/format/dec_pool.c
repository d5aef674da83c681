/* Pool tables and id sets (see dec_pool.h). */
#include "format/dec_pool.h"

#include <stdlib.h>
#include <string.h>

#define POOL_MIN_SLOTS 64u
#define POOL_KEEP_SLOTS 4096u   /* clear() keeps tables up to this size, frees bigger ones */
#define IDSET_MAX_KEYS (1u << 20)

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

/* ---- id set ---- */

static inline uint32_t key_hash(uint64_t k) {
    return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 40);
}

void d9_idset_init(d9_idset *s) { memset(s, 0, sizeof *s); }

static int idset_resize(d9_idset *s, uint32_t nslots) {
    uint64_t *keys = malloc((size_t)nslots * sizeof *keys);
    if (!keys) return -1;
    memset(keys, 0xff, (size_t)nslots * sizeof *keys);
    for (uint32_t i = 0; s->keys && i <= s->mask; i++) {
        if (s->keys[i] == UINT64_MAX) continue;
        uint32_t j = key_hash(s->keys[i]) & (nslots - 1);
        while (keys[j] != UINT64_MAX) j = (j + 1) & (nslots - 1);
        keys[j] = s->keys[i];
    }
    free(s->keys);
    s->keys = keys;
    s->mask = nslots - 1;
    return 0;
}

int d9_idset_add(d9_idset *s, uint64_t key) {
    if (d9_idset_has(s, key)) return 0;
    if (s->count >= IDSET_MAX_KEYS) return -1;
    if (!s->keys || (s->count + 1) * 2 > s->mask + 1) {
        if (idset_resize(s, s->keys ? (s->mask + 1) * 2 : 64) != 0) return -1;
    }
    uint32_t i = key_hash(key) & s->mask;
    while (s->keys[i] != UINT64_MAX) i = (i + 1) & s->mask;
    s->keys[i] = key;
    s->count++;
    return 1;
}

bool d9_idset_has(const d9_idset *s, uint64_t key) {
    if (!s->count) return false;
    uint32_t i = key_hash(key) & s->mask;
    while (s->keys[i] != UINT64_MAX) {
        if (s->keys[i] == key) return true;
        i = (i + 1) & s->mask;
    }
    return false;
}

void d9_idset_clear(d9_idset *s) {
    if (!s->count) return;
    if (s->mask + 1 > 4096) {
        free(s->keys);
        memset(s, 0, sizeof *s);
        return;
    }
    memset(s->keys, 0xff, (size_t)(s->mask + 1) * sizeof *s->keys);
    s->count = 0;
}

void d9_idset_free(d9_idset *s) {
    free(s->keys);
    memset(s, 0, sizeof *s);
}
