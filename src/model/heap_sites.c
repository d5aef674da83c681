/* The sampled heap by allocation site (heap_sites.h). */
#include "model/heap_sites.h"

#include <stdlib.h>
#include <string.h>

#include "common/heap_weight.h"

#define SIZE_BITS 40
#define SIZE_MASK ((1ull << SIZE_BITS) - 1)
#define DEFAULT_RATE (512u * 1024u)

void d9m_heap_init(d9m_heap *h) { memset(h, 0, sizeof *h); }

void d9m_heap_free(d9m_heap *h) {
    d9_u64_map_free(&h->live);
    d9_u64_map_free(&h->site_of_stack);
    free(h->sites);
    memset(h, 0, sizeof *h);
}

void d9m_heap_note_rate(d9m_heap *h, const char *value, size_t len) {
    uint64_t v = 0;
    size_t i = 0;
    for (; i < len && value[i] >= '0' && value[i] <= '9' && v < (1ull << 50); i++) v = v * 10 + (uint64_t)(value[i] - '0');
    if (i == len && v) h->rate = v;
}

static uint64_t rate_of(const d9m_heap *h) { return h->rate ? h->rate : DEFAULT_RATE; }

/* Once past the middle of the trace: every site's in-use bytes then. */
static void take_mid(d9m_heap *h, uint64_t ts) {
    if (h->mid_taken || !h->mid_ts || ts < h->mid_ts) return;
    h->mid_taken = true;
    for (size_t i = 0; i < h->nsites; i++) h->sites[i].inuse_mid_bytes = h->sites[i].inuse_bytes;
}

static d9m_heap_site *site_for(d9m_heap *h, uint32_t stack, size_t *index) {
    uint64_t *k = d9_u64_map_get(&h->site_of_stack, stack);
    if (k) {
        *index = (size_t)*k;
        return &h->sites[*k];
    }
    if (h->nsites == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        d9m_heap_site *s = realloc(h->sites, cap * sizeof *s);
        if (!s) return NULL;
        h->sites = s;
        h->cap = cap;
    }
    if (d9_u64_map_put(&h->site_of_stack, stack, h->nsites) != 0) return NULL;
    d9m_heap_site *s = &h->sites[h->nsites];
    memset(s, 0, sizeof *s);
    s->stack = stack;
    *index = h->nsites++;
    return s;
}

int d9m_heap_alloc(d9m_heap *h, uint64_t ts, uint32_t stack, uint64_t addr, uint64_t size) {
    take_mid(h, ts);
    size_t index;
    d9m_heap_site *s = site_for(h, stack, &index);
    if (!s) return -1;
    if (size > SIZE_MASK) size = SIZE_MASK;
    double w = d9_heap_weight(size, rate_of(h));
    h->samples++;
    s->samples++;
    s->alloc_bytes += w * (double)size;
    s->alloc_count += w;
    if (addr) { /* 0: the block's free would not be recorded (dial9 without its live set) */
        /* a block at the same address whose free was lost: the newer one holds it now */
        uint64_t *old = d9_u64_map_get(&h->live, addr);
        if (old) {
            d9m_heap_site *o = &h->sites[*old >> SIZE_BITS];
            double ow = d9_heap_weight(*old & SIZE_MASK, rate_of(h));
            o->inuse_bytes -= ow * (double)(*old & SIZE_MASK);
            o->inuse_count -= ow;
        }
        if (d9_u64_map_put(&h->live, addr, (uint64_t)index << SIZE_BITS | size) != 0) return -1;
        s->inuse_bytes += w * (double)size;
        s->inuse_count += w;
        if (s->inuse_bytes > s->peak_inuse_bytes) s->peak_inuse_bytes = s->inuse_bytes;
    }
    return 0;
}

int d9m_heap_free_event(d9m_heap *h, uint64_t ts, uint64_t addr) {
    take_mid(h, ts);
    uint64_t *v = d9_u64_map_get(&h->live, addr);
    if (!v) { /* allocated before the trace began, or its sample is in a lost segment */
        h->frees_unmatched++;
        return 0;
    }
    d9m_heap_site *s = &h->sites[*v >> SIZE_BITS];
    uint64_t size = *v & SIZE_MASK;
    double w = d9_heap_weight(size, rate_of(h));
    s->inuse_bytes -= w * (double)size;
    s->inuse_count -= w;
    if (s->inuse_bytes < 0.5) s->inuse_bytes = s->inuse_count = 0; /* rounding */
    s->frees++;
    h->frees++;
    d9_u64_map_remove(&h->live, addr);
    return 0;
}
