/* What the heap library (libdial9-preload-heap.so, preload_heap.c) asks of the shim
 * (libdial9-preload.so, preload_heap_link.c): the heap sampler's countdown and records, which
 * live with the recorder. The heap library is preloaded only when heap profiling is on at
 * launch (`dial9 run` adds it for DIAL9_MEMORY_PROFILE_ENABLED=1), so with it off (the default)
 * malloc and free are libc's own: no interposer, no symbol lookup, no PLT hop.
 *
 * The heap library finds the table by name (dlsym(RTLD_DEFAULT, D9P_HEAP_LINK_SYMBOL)) rather
 * than by linking to the shim: preloaded without it, or beside a shim of another build (abi), it
 * says so and passes every call through, instead of failing to load. */
#ifndef D9_PRELOAD_PRELOAD_HEAP_LINK_H
#define D9_PRELOAD_PRELOAD_HEAP_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sources/heap_sampler.h"

#define D9P_HEAP_LINK_SYMBOL "d9p_heap_attach"
#define D9P_HEAP_LINK_ABI 1u

typedef struct d9p_heap_link {
    uint32_t abi; /* D9P_HEAP_LINK_ABI */
    /* The calling thread's countdown (d9__heap_left): bytes it may still allocate before its
     * next sample. The heap library keeps the pointer per thread and counts down through it. */
    int64_t *(*countdown)(void);
    /* sources/heap_sampler.h: d9_heap_sample_due, d9_heap_record_alloc, d9_heap_record_free */
    bool (*sample_due)(size_t n);
    void (*record_alloc)(const void *p, size_t n, const d9_heap_own_code *own);
    void (*record_free)(const void *p, size_t n, uint64_t alloc_ticks);
    uint64_t (*ticks)(void); /* the recorder's clock, for a sampled block's allocation time */
} d9p_heap_link;

/* The shim's table; the heap library attaches by calling it (the shim then knows that the
 * allocator is interposed). */
typedef const d9p_heap_link *(*d9p_heap_link_fn)(void);
const d9p_heap_link *d9p_heap_attach(void);

#endif
