/* Sampled heap profiling (DIAL9_MEMORY_PROFILE_ENABLED): which allocations are sampled, and their
 * records. Each thread counts down bytes allocated; the countdown is drawn from an exponential
 * distribution of mean R (DIAL9_MEMORY_SAMPLE_BYTES), so an allocation of s bytes is sampled
 * with probability 1 - e^(-s/R) whatever came before it, and a sample stands for
 * s / (1 - e^(-s/R)) bytes and 1 / (1 - e^(-s/R)) allocations (d9_heap_weight). One fresh draw
 * follows each sample.
 *
 * The allocator's fast path is one thread-local subtraction and a test (d9_heap_countdown); the
 * rest runs when the countdown runs out. No lock anywhere. A sample's record carries the
 * frame-pointer chain and a copy of the top of the stack, in a task dump's payload layout, and
 * the collector unwinds it on the background thread (d9_task_dump_unwind): nothing is unwound on
 * the allocating thread, so never under a lock of the dynamic loader the program may hold.
 *
 * Who calls it: the preload shim's malloc family (preload/preload_heap.c) and programs with an
 * allocator of their own (d9_heap_sample_alloc / d9_heap_sample_free, dial9.h). */
#ifndef D9_SOURCES_HEAP_SAMPLER_H
#define D9_SOURCES_HEAP_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9/dial9.h"

struct d9_collector;

#define D9_HEAP_DEFAULT_SAMPLE_BYTES (512u * 1024u)
#define D9_HEAP_FRAMES 64 /* frame-pointer links kept per sample */
/* The metadata key of the rate, dial9's name (its design: memory-profiling.md) */
#define D9_HEAP_RATE_KEY "memory_profile.sample_rate_bytes"

/* Bytes the thread may still allocate before its next sample (its fast path). */
extern __thread int64_t d9__heap_left __attribute__((tls_model("initial-exec")));

/* Count n bytes; true when the countdown ran out (call d9_heap_sample_due). */
static inline bool d9_heap_countdown(size_t n) {
    uint64_t left = (uint64_t)d9__heap_left - n; /* unsigned: wraps, never overflows */
    d9__heap_left = (int64_t)left;
    return __builtin_expect((int64_t)left <= 0, 0);
}

/* The countdown ran out at an allocation of n bytes: draw the next one. True when this block is
 * to be sampled (profiling is on, a recording runs, the thread is not inside the sampler). */
bool d9_heap_sample_due(size_t n);

/* The code of the allocator's own functions, [lo, hi): the frames of a sample's stack that
 * return into it are left out, so its first frame is where the program called the allocator. */
typedef struct d9_heap_own_code {
    uint64_t lo, hi;
} d9_heap_own_code;

/* Record the sampled block p of n bytes with the stack of the call: the frames above this
 * function's caller, less the leading ones in `own` (NULL: none, the caller's caller first).
 * Takes the sampler's guard: allocations it causes are not sampled. */
void d9_heap_record_alloc(const void *p, size_t n, const d9_heap_own_code *own);
/* Record the free of sampled block p (n bytes, allocated at alloc_ticks, 0: unknown). */
void d9_heap_record_free(const void *p, size_t n, uint64_t alloc_ticks);

/* The thread's guard: while held, the thread's allocations are not sampled (the sampler's own,
 * and libc's made on its behalf). Enter returns false when already held. */
bool d9_heap_enter(void);
void d9_heap_leave(void);
/* The calling thread is never sampled from now on (the recorder's own threads; also declared
 * in core/own_thread_name.h, which every thread naming itself as the recorder's calls). */
void d9_heap_exclude_thread(void);

/* Start and stop with the recording (sources.c): notes the source and the rate in the metadata,
 * adds the loss counter's source. */
void d9_heap_sampler_start(const d9_config *cfg, struct d9_collector *c);
void d9_heap_sampler_stop(void);

typedef struct d9_heap_counters {
    uint64_t sampled;   /* allocations sampled and recorded */
    uint64_t freed;     /* frees of sampled blocks recorded */
    uint64_t dropped;   /* samples or frees not recorded (no buffer, full ring, re-entered) */
} d9_heap_counters;
void d9_heap_counters_get(d9_heap_counters *out);

#endif
