/* The heap sampler (see heap_sampler.h). Per thread: the countdown, the generator, the guard and
 * the stack's bounds, all in initial-exec TLS (no allocation on the fast path, none to look the
 * state up). Process-wide: what the start set (on, the rate, the seed, the run number) and the
 * counters, written with relaxed atomics. */
#include "sources/heap_sampler.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/exp_log.h"
#include "core/clock.h"
#include "core/collector.h"
#include "core/own_thread_name.h"
#include "core/records.h"
#include "core/run_metadata.h"
#include "core/source.h"
#include "core/thread_buffer.h"
#include "sources/fp_unwind.h"
#include "sources/stack_unwind.h"

/* Bytes between two looks at whether profiling started, on a thread whose countdown is no draw
 * (profiling off, or not started yet): one slow path per 256 KiB costs nothing, and a thread
 * misses at most that much of a run's start. A thread's countdown of one run carries on into
 * the next (the exponential has no memory: unbiased at the same rate; a new rate applies from
 * the thread's next sample). */
#define RECHECK_BYTES (256ll << 10)
#define IN_GUARD_LEFT (INT64_MAX / 2)

__thread int64_t d9__heap_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_rng __attribute__((tls_model("initial-exec")));
static __thread uint32_t tls_run __attribute__((tls_model("initial-exec")));  /* run of the draw */
static __thread int64_t tls_saved_left __attribute__((tls_model("initial-exec")));
static __thread bool tls_busy __attribute__((tls_model("initial-exec")));
static __thread uint8_t tls_bounds_state __attribute__((tls_model("initial-exec"))); /* 0 ?, 1 known, 2 none */
static __thread d9_stack_bounds tls_bounds __attribute__((tls_model("initial-exec")));

static _Atomic bool g_on;
static _Atomic uint32_t g_run;          /* 0: never started */
static _Atomic uint64_t g_rate = D9_HEAP_DEFAULT_SAMPLE_BYTES;
static _Atomic uint64_t g_seed;         /* 0: from the clock */
static _Atomic uint64_t g_threads_seeded;
static _Atomic uint64_t c_sampled, c_freed, c_dropped;

/* ---------------------------------------------------------------- draws */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Exp(rate) bytes, at least 1 (rate 1: every allocation is sampled). */
static int64_t draw(uint64_t rate) {
    if (rate <= 1) return 1;
    double u = (double)((splitmix(&tls_rng) >> 11) + 1) / 9007199254740992.0; /* (0, 1] */
    double v = d9_neg_log(u) * (double)rate;
    return v < 1 ? 1 : v > (double)(IN_GUARD_LEFT / 2) ? IN_GUARD_LEFT / 2 : (int64_t)v;
}

/* A thread's first draw of a run: seeded from DIAL9_MEMORY_SEED and the order in which threads
 * first sample (deterministic for one thread), or from the clock and the thread id. */
static void seed_thread(void) {
    uint64_t seed = atomic_load_explicit(&g_seed, memory_order_relaxed);
    uint64_t k = atomic_fetch_add_explicit(&g_threads_seeded, 1, memory_order_relaxed);
    tls_rng = seed ? seed + k * 0xd1b54a32d192ed03ull
                   : d9_clock_ticks() ^ ((uint64_t)syscall(SYS_gettid) << 32) ^ k;
    (void)splitmix(&tls_rng);
}

bool d9_heap_sample_due(size_t n) {
    if (tls_busy) { /* a huge block inside the guard: stay out of the way */
        d9__heap_left = IN_GUARD_LEFT;
        return false;
    }
    if (!atomic_load_explicit(&g_on, memory_order_acquire)) {
        d9__heap_left = RECHECK_BYTES;
        return false;
    }
    uint64_t rate = atomic_load_explicit(&g_rate, memory_order_relaxed);
    uint32_t run = atomic_load_explicit(&g_run, memory_order_relaxed);
    if (tls_run != run) { /* no draw of this run yet: the process starts afresh at this block */
        tls_run = run;
        seed_thread();
        int64_t left = draw(rate) - (int64_t)(n > (size_t)INT64_MAX / 4 ? (size_t)INT64_MAX / 4 : n);
        if (left > 0) {
            d9__heap_left = left;
            return false;
        }
    }
    d9__heap_left = draw(rate); /* one fresh draw per sample: the exponential has no memory */
    return true;
}

/* ---------------------------------------------------------------- the guard */

bool d9_heap_enter(void) {
    if (tls_busy) return false;
    tls_busy = true;
    tls_saved_left = d9__heap_left;
    d9__heap_left = IN_GUARD_LEFT;
    return true;
}

void d9_heap_leave(void) {
    d9__heap_left = tls_saved_left;
    tls_busy = false;
}

void d9_heap_exclude_thread(void) { /* the guard, held for the thread's life */
    (void)d9_heap_enter();
}

/* ---------------------------------------------------------------- records */

/* The payload of a task dump's record (d9_task_dump_unwind reads it): [0] chain length n,
 * [1..1+n) the chain, then sp, bp, the copy's length in bytes and the copy. */
#define PAYLOAD_FIXED 4

static const d9_stack_bounds *bounds_of_thread(uint64_t fp) {
    if (tls_bounds_state == 0) tls_bounds_state = d9_stack_bounds_of_self(&tls_bounds) ? 1 : 2;
    if (tls_bounds_state != 1 || fp < tls_bounds.lo || fp >= tls_bounds.hi) return NULL;
    return &tls_bounds;
}

#if defined(__clang__)
#define NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))
#else
#define NO_SANITIZE __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))
#endif

/* The frame chain from fp (a frame of ours), bounded by b: the return address of each frame into
 * out[], leaf first, and each frame's address into fps[]. */
NO_SANITIZE static uint32_t walk(uint64_t fp, const d9_stack_bounds *b, uint64_t *out, uint64_t *fps, uint32_t max) {
    uint32_t n = 0;
    uint64_t prev = fp;
    while (n < max) {
        if ((fp & 7) || fp < b->lo || fp > b->hi - 16 || fp < prev || fp - prev > D9_FP_MAX_FRAME_BYTES) break;
        const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
        if (!d9_fp_plausible_pc(frame[1])) break;
        fps[n] = fp;
        out[n++] = frame[1];
        if (frame[0] <= fp) break; /* the chain must climb strictly */
        prev = fp;
        fp = frame[0];
    }
    return n;
}

static void count_drop(void) { atomic_fetch_add_explicit(&c_dropped, 1, memory_order_relaxed); }

NO_SANITIZE __attribute__((noinline)) void d9_heap_record_alloc(const void *p, size_t n,
                                                              const d9_heap_own_code *own) {
    if (!d9_heap_enter()) {
        count_drop();
        return;
    }
    uint64_t ticks = d9_clock_ticks();
    d9_thread *t = d9_thread_current();
    uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    const d9_stack_bounds *b = t ? bounds_of_thread(here) : NULL;
    /* chain[k] returns into the function whose frame is fps[k + 1]; chain[0] into our caller,
     * which is the allocator's: from chain[1] on, less the allocator's own frames */
    uint64_t chain[D9_HEAP_FRAMES + 8], fps[D9_HEAP_FRAMES + 8];
    uint32_t all = b ? walk(here, b, chain, fps, D9_HEAP_FRAMES + 8) : 0, first = 1;
    while (own && first < all && chain[first] >= own->lo && chain[first] < own->hi) first++;
    uint32_t nchain = first < all ? all - first : 0;
    if (nchain > D9_HEAP_FRAMES) nchain = D9_HEAP_FRAMES;
    /* the frame chain[first] returns from: its caller's sp and bp once it returns */
    uint64_t fp = nchain ? fps[first] : 0;
    uint64_t sp = fp + 16, bp = nchain ? *(const uint64_t *)(uintptr_t)fp : 0;
    uint64_t copy_words = nchain ? D9_UNWIND_STACK_BYTES / 8 : 0;
    uint64_t payload = PAYLOAD_FIXED + nchain + copy_words;
    uint64_t *r = t ? d9_thread_reserve(t, 4 + payload) : NULL;
    if (!r) {
        count_drop();
        d9_heap_leave();
        return;
    }
    r[0] = D9_REC_HEADER(ticks, D9_REC_ALLOC);
    r[1] = n;
    r[2] = (uint64_t)(uintptr_t)p;
    r[3] = payload;
    uint64_t *w = r + 4;
    *w++ = nchain;
    for (uint32_t i = 0; i < nchain; i++) *w++ = chain[first + i];
    *w++ = sp;
    *w++ = bp;
    uint32_t copied = nchain ? d9_fp_copy_stack((uint8_t *)(w + 1), sp, b, D9_UNWIND_STACK_BYTES) : 0;
    *w = copied; /* the words past the copy (a short stack) are left as they were: not read */
    d9_thread_commit(t, 4 + payload);
    atomic_fetch_add_explicit(&c_sampled, 1, memory_order_relaxed);
    d9_heap_leave();
}

void d9_heap_record_free(const void *p, size_t n, uint64_t alloc_ticks) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return; /* no recording to hold it */
    if (!d9_heap_enter()) {
        count_drop();
        return;
    }
    d9_thread *t = d9_thread_current();
    uint64_t *r = t ? d9_thread_reserve(t, D9_REC_WORDS_FREE) : NULL;
    if (!r) {
        count_drop();
    } else {
        r[0] = D9_REC_HEADER(d9_clock_ticks(), D9_REC_FREE);
        r[1] = (uint64_t)(uintptr_t)p;
        r[2] = n;
        r[3] = alloc_ticks;
        d9_thread_commit(t, D9_REC_WORDS_FREE);
        atomic_fetch_add_explicit(&c_freed, 1, memory_order_relaxed);
    }
    d9_heap_leave();
}

/* ---------------------------------------------------------------- the library call */

D9_API int d9_heap_sample_alloc(const void *ptr, size_t size) {
    if (!ptr || !d9_heap_countdown(size) || !d9_heap_sample_due(size)) return 0;
    d9_heap_record_alloc(ptr, size, NULL);
    return 1;
}

D9_API void d9_heap_sample_free(const void *ptr, size_t size) {
    if (ptr) d9_heap_record_free(ptr, size, 0);
}

/* ---------------------------------------------------------------- lifecycle, losses */

typedef struct loss_source {
    d9_source base;
    uint64_t reported;
} loss_source;

static void loss_collect(d9_source *s, d9_src_batch *out) {
    loss_source *l = s->ctx;
    uint64_t now = atomic_load_explicit(&c_dropped, memory_order_relaxed);
    if (now == l->reported) return;
    d9_src_event ev = {.ts_ns = d9_mono_ns(), .kind = D9_SRC_LOST, .cpu = -1};
    ev.lost.count = now - l->reported;
    ev.lost.reason = "memory_profile";
    if (d9_src_batch_add(out, &ev)) l->reported = now;
}

static void loss_close(d9_source *s) { free(s->ctx); }

void d9_heap_sampler_start(const d9_config *cfg, d9_collector *c) {
    atomic_store(&g_on, false);
    if (!cfg->memory_profile) {
        d9_collector_note_source(c, "memory_profile", false, "disabled by configuration (DIAL9_MEMORY_PROFILE_ENABLED=1 enables it)");
        return;
    }
    uint64_t rate = cfg->memory_sample_bytes ? cfg->memory_sample_bytes : D9_HEAP_DEFAULT_SAMPLE_BYTES;
    loss_source *l = calloc(1, sizeof *l);
    if (l) {
        l->base = (d9_source){.name = "memory_profile", .collect = loss_collect, .close = loss_close, .ctx = l};
        l->reported = atomic_load(&c_dropped);
        if (!d9_collector_add_source(c, &l->base)) {
            free(l);
            l = NULL;
        }
    }
    if (!l) {
        d9_collector_note_source(c, "memory_profile", false, "out of memory or too many data sources");
        return;
    }
    d9_run_metadata_set(d9_collector_metadata(c), D9_HEAP_RATE_KEY, "%llu", (unsigned long long)rate);
    char detail[200];
    snprintf(detail, sizeof detail,
             "sampled allocations, one per %llu bytes on average (exponential countdown per thread), with the frees of sampled blocks",
             (unsigned long long)rate);
    d9_collector_note_source(c, "memory_profile", true, detail);
    atomic_store(&g_rate, rate);
    atomic_store(&g_seed, cfg->memory_seed);
    atomic_store(&g_threads_seeded, 0);
    atomic_fetch_add(&g_run, 1);
    atomic_store_explicit(&g_on, true, memory_order_release);
}

void d9_heap_sampler_stop(void) { atomic_store(&g_on, false); }

void d9_heap_counters_get(d9_heap_counters *out) {
    out->sampled = atomic_load(&c_sampled);
    out->freed = atomic_load(&c_freed);
    out->dropped = atomic_load(&c_dropped);
}
