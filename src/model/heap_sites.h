/* The sampled heap by allocation site, for `analyze` and `export --stacks heap`
 * (docs/heap-profiling.md): AllocEvent and FreeEvent, each sample weighted (common/heap_weight.h) at the rate of the segment metadata, summed by
 * allocation site (the sample's stack). Memory: one entry per site and per sampled block still
 * live, never per event. */
#ifndef D9_MODEL_HEAP_SITES_H
#define D9_MODEL_HEAP_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/u64_map.h"

/* One allocation site's totals; bytes and counts are weighted estimates. */
typedef struct d9m_heap_site {
    uint32_t stack;            /* the analysis's stack id */
    double alloc_bytes, alloc_count;
    double inuse_bytes, inuse_count;   /* at the end of the trace */
    double peak_inuse_bytes;
    double inuse_mid_bytes;    /* in use at the middle of the trace (growth = end - mid) */
    uint64_t samples, frees;   /* sampled blocks, and frees of them seen */
} d9m_heap_site;

typedef struct d9m_heap {
    uint64_t rate;             /* bytes per sample, from the metadata (0: not read yet) */
    uint64_t mid_ts;           /* the middle of the trace, when known (0: not) */
    bool mid_taken;
    d9_u64_map live;           /* address -> site index << 40 | size */
    d9_u64_map site_of_stack;  /* stack id -> site index */
    d9m_heap_site *sites;
    size_t nsites, cap;
    uint64_t samples, frees, frees_unmatched;
} d9m_heap;

/* The metadata key of the sampling rate (the recorder's sources/heap_sampler.h; dial9's name). */
#define D9M_HEAP_RATE_KEY "memory_profile.sample_rate_bytes"

void d9m_heap_init(d9m_heap *h);
void d9m_heap_free(d9m_heap *h);
/* The metadata's memory_profile.sample_rate_bytes value (text). */
void d9m_heap_note_rate(d9m_heap *h, const char *value, size_t len);
/* 0, or -1 when out of memory. */
int d9m_heap_alloc(d9m_heap *h, uint64_t ts, uint32_t stack, uint64_t addr, uint64_t size);
int d9m_heap_free_event(d9m_heap *h, uint64_t ts, uint64_t addr);

#endif
