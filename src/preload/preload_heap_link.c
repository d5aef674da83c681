/* The shim's half of heap profiling under zero-code (preload_heap_link.h): the table the heap
 * library attaches to, and what a run says when it profiles the heap but nothing interposes the
 * allocator (the heap library was not preloaded: under zero-code, heap profiling is chosen at
 * launch). */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/collector.h"
#include "core/run_metadata.h"
#include "preload.h"
#include "preload_heap_link.h"

static _Atomic bool g_attached;

static int64_t *thread_countdown(void) { return &d9__heap_left; }
static uint64_t ticks(void) { return d9_clock_ticks(); }

static const d9p_heap_link k_link = {
    .abi = D9P_HEAP_LINK_ABI,
    .countdown = thread_countdown,
    .sample_due = d9_heap_sample_due,
    .record_alloc = d9_heap_record_alloc,
    .record_free = d9_heap_record_free,
    .ticks = ticks,
};

/* Called by the heap library when it resolves its functions (inside a malloc: no lock, no
 * allocation here). */
D9P_EXPORT const d9p_heap_link *d9p_heap_attach(void) {
    atomic_store_explicit(&g_attached, true, memory_order_relaxed);
    return &k_link;
}

void d9p_heap_note_run(d9_collector *c) {
    if (!d9_run_metadata_get(d9_collector_metadata(c), D9_HEAP_RATE_KEY)) return;
    if (atomic_load_explicit(&g_attached, memory_order_relaxed)) return;
    /* the sampler is on: the program's own d9_heap_sample_alloc calls are still recorded */
    static const char why[] = "malloc and free are not interposed: libdial9-preload-heap.so is not in LD_PRELOAD "
                              "(dial9 run adds it when DIAL9_MEMORY_PROFILE_ENABLED=1 at launch); only "
                              "d9_heap_sample_alloc calls are sampled";
    d9_collector_note_source(c, "memory_profile", true, why);
    static _Atomic bool said;
    if (!atomic_exchange(&said, true)) fprintf(stderr, "dial9: heap profiling: %s\n", why);
}
