/* Heap sampling of unmodified programs (sources/heap_sampler.h): the shim's malloc, calloc,
 * realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc and
 * malloc_usable_size. C++'s operator new and delete call malloc and free in libstdc++, so they
 * are seen here too.
 *
 * Each call forwards to the next definition (dlsym(RTLD_NEXT): libc's, or an allocator the
 * program links). dlsym itself calls calloc: while this thread resolves them, allocations come
 * from a small static bootstrap arena, which free ignores. Until a run of the process profiles
 * the heap (the default: never), each interposer is a jump to that definition (direct_*).
 *
 * A sampled block is allocated HEADER bytes larger (more when aligned), and the 32 bytes
 * before the pointer handed out say so: the real block, the size asked for, the allocation's
 * ticks, and MAGIC ^ pointer in the last word. free of any block reads that one word (p[-1]):
 * under glibc it is the chunk's size field, which never has the top bit set, while MAGIC ^ p
 * always does, so an unsampled block costs one load and a compare, no table. Blocks freed on
 * another thread, realloc'ed or given to malloc_usable_size carry their header with them. A
 * page-aligned pointer is read at p[-1] only while a sampled page-aligned block is live (the
 * page before it may be unmapped under another allocator). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "preload.h"
#include "sources/heap_sampler.h"

#define HEADER 32u
#define MAGIC 0xd19a4ea9b10c0000ull /* top bit set: never a glibc chunk size */

#if defined(__clang__)
#define NO_ASAN __attribute__((no_sanitize("address")))
#else
#define NO_ASAN __attribute__((no_sanitize_address))
#endif

typedef struct block_header {
    uint64_t base;  /* what the real allocator returned */
    uint64_t size;  /* what the program asked for */
    uint64_t ticks; /* when */
    uint64_t check; /* MAGIC ^ the pointer handed out */
} block_header;

/* ---------------------------------------------------------------- the real allocator */

static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    void *(*memalign)(size_t, size_t);
    size_t (*usable)(void *);
} real;
static void *(*_Atomic real_malloc)(size_t); /* set last: all are resolved */
static __thread bool tls_resolving __attribute__((tls_model("initial-exec")));

/* While no run of this process profiles the heap (the default), the interposers' fast path is
 * one load, a test and a jump to the real function: no countdown (a thread-local subtraction),
 * no sampled block to look for. These are the real functions then, NULL once a run with heap
 * profiling starts (d9p_heap_profiling, sticky) or before they are resolved. Counted
 * (callgrind, a redis GET: 8 malloc_usable_size, ~4 free, ~3 malloc): 200 instructions a
 * request with the countdown and the sampled-block tests, see bench/README.md. */
static _Atomic bool heap_profiled;
static void *(*_Atomic direct_malloc)(size_t);
static void (*_Atomic direct_free)(void *);
static size_t (*_Atomic direct_usable)(void *);

static void direct_set(bool on) {
    atomic_store(&direct_malloc, on ? real.malloc : NULL);
    atomic_store(&direct_free, on ? real.free : NULL);
    atomic_store(&direct_usable, on ? real.usable : NULL);
}

void d9p_heap_profiling(bool on) {
    if (!on || atomic_load(&heap_profiled)) return;
    atomic_store(&heap_profiled, true);
    direct_set(false); /* after the flag: a resolve() in between sees it (below) */
}

static void resolve(void) {
    if (tls_resolving) return;
    tls_resolving = true;
    void *m = dlsym(RTLD_NEXT, "malloc");
    real.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    real.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    real.usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    real.malloc = (void *(*)(size_t))m;
    if (m && real.calloc && real.realloc && real.free && real.memalign) {
        atomic_store_explicit(&real_malloc, real.malloc, memory_order_release);
        /* seq_cst, both sides: a profiling start that stored its flag before this load has
         * its NULLs stored after ours, one that stores it after sees our pointers go */
        if (!atomic_load(&heap_profiled)) direct_set(true);
        if (atomic_load(&heap_profiled)) direct_set(false);
    }
    tls_resolving = false;
}

static inline bool resolved(void) {
    if (__builtin_expect(atomic_load_explicit(&real_malloc, memory_order_acquire) != NULL, 1)) return true;
    resolve();
    return atomic_load_explicit(&real_malloc, memory_order_acquire) != NULL;
}

/* ---------------------------------------------------------------- the bootstrap arena */

#define ARENA_BYTES (256u * 1024u)
static _Alignas(64) unsigned char arena[ARENA_BYTES];
static _Atomic size_t arena_used;

static inline bool in_arena(const void *p) {
    return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_BYTES;
}

/* A block of the arena: its size in the 8 bytes before it. NULL (ENOMEM) once spent. */
static void *arena_alloc(size_t n, size_t align) {
    if (align < 16) align = 16;
    if (n > ARENA_BYTES || align > 4096) {
        errno = ENOMEM;
        return NULL;
    }
    size_t need = n + align + 16, start = atomic_fetch_add(&arena_used, need);
    if (start + need > ARENA_BYTES) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t p = ((uintptr_t)(arena + start) + 16 + align - 1) & ~(uintptr_t)(align - 1);
    ((uint64_t *)p)[-1] = n;
    return (void *)p; /* zeroed: static storage, never reused */
}

static size_t arena_size(const void *p) { return (size_t)((const uint64_t *)p)[-1]; }

/* ---------------------------------------------------------------- sampled blocks */

static _Atomic uint64_t page_aligned_live; /* sampled blocks whose pointer is page-aligned */
/* Whether this process ever handed out a sampled block: until then (heap profiling off, the
 * default), no block has a header to look for, and free and malloc_usable_size go straight to
 * the real allocator after one predictable test (and the arena's range). */
static _Atomic bool sampled_ever;

/* The shim's code, whose frames a sample's stack leaves out (found from its own ELF header in
 * memory: no call, no lock, usable inside malloc). */
extern const ElfW(Ehdr) __ehdr_start;
static d9_heap_own_code own_code;

static const d9_heap_own_code *shim_code(void) {
    if (own_code.hi) return &own_code;
    const ElfW(Ehdr) *eh = &__ehdr_start;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uint64_t base = UINT64_MAX, lo = 0, hi = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < base) base = ph[i].p_vaddr;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X)) continue;
        lo = (uint64_t)(uintptr_t)eh + (ph[i].p_vaddr - base);
        hi = lo + ph[i].p_memsz;
    }
    own_code.lo = lo;
    own_code.hi = hi;
    return &own_code;
}

NO_ASAN static inline bool looks_sampled(uintptr_t u) {
    return ((const uint64_t *)u)[-1] == (MAGIC ^ u);
}

static inline block_header *header_at(const void *p) { return (block_header *)((uintptr_t)p - HEADER); }

/* A sampled block (see above) or NULL; for any pointer free may get. */
static block_header *header_of(const void *p) {
    uintptr_t u = (uintptr_t)p;
    if (!p || in_arena(p)) return NULL;
    if ((u & 4095) == 0 && atomic_load_explicit(&page_aligned_live, memory_order_relaxed) == 0) return NULL;
    return looks_sampled(u) ? header_at(p) : NULL;
}

/* Hand out the block at base + off (off >= HEADER) of n bytes and record it. */
static void *take_sample(void *base, size_t off, size_t n) {
    if (!base) return NULL;
    uintptr_t p = (uintptr_t)base + off;
    block_header *h = header_at((void *)p);
    h->base = (uintptr_t)base;
    h->size = n;
    h->ticks = d9_clock_ticks();
    h->check = MAGIC ^ p;
    if (!atomic_load_explicit(&sampled_ever, memory_order_relaxed))
        atomic_store_explicit(&sampled_ever, true, memory_order_release);
    if ((p & 4095) == 0) atomic_fetch_add_explicit(&page_aligned_live, 1, memory_order_relaxed);
    d9_heap_record_alloc((void *)p, n, shim_code());
    return (void *)p;
}

/* Give a sampled block back: its free recorded, the header cleared (a later block at the same
 * place must not look sampled), the real block freed. */
static void release_sampled(void *p, block_header *h) {
    d9_heap_record_free(p, h->size, h->ticks);
    void *base = (void *)(uintptr_t)h->base;
    h->check = 0;
    if (((uintptr_t)p & 4095) == 0) atomic_fetch_sub_explicit(&page_aligned_live, 1, memory_order_relaxed);
    real.free(base);
}

static size_t usable_of_sampled(const void *p, const block_header *h) {
    size_t off = (uintptr_t)p - h->base;
    return real.usable ? real.usable((void *)(uintptr_t)h->base) - off : h->size;
}

/* Whether size + extra overflows. */
static inline bool too_big(size_t n, size_t extra) { return n > SIZE_MAX - extra; }

/* ---------------------------------------------------------------- the interposers
 * Each is a fast path (the countdown, then a jump to the real function) and a slow path of its
 * own, out of line, so that the fast path saves no register. */

__attribute__((noinline)) static void *malloc_slow(size_t n) {
    if (!resolved()) return arena_alloc(n, 16);
    if ((int64_t)d9__heap_left > 0 || !d9_heap_sample_due(n) || too_big(n, HEADER)) return real.malloc(n);
    return take_sample(real.malloc(n + HEADER), HEADER, n);
}

D9P_EXPORT void *malloc(size_t n) {
    void *(*direct)(size_t) = atomic_load_explicit(&direct_malloc, memory_order_relaxed);
    if (__builtin_expect(direct != NULL, 1)) return direct(n);
    void *(*fn)(size_t) = atomic_load_explicit(&real_malloc, memory_order_acquire);
    if (__builtin_expect(!fn || d9_heap_countdown(n), 0)) return malloc_slow(n);
    return fn(n);
}

__attribute__((noinline)) static void free_slow(void *p) {
    block_header *h = header_of(p);
    if (h) release_sampled(p, h);
    else if (p && !in_arena(p) && real.free) real.free(p);
}

D9P_EXPORT void free(void *p) {
    uintptr_t u = (uintptr_t)p;
    void (*direct)(void *) = atomic_load_explicit(&direct_free, memory_order_relaxed);
    /* the bootstrap arena's blocks are never the real allocator's */
    if (__builtin_expect(direct != NULL && u - (uintptr_t)arena >= ARENA_BYTES, 1)) return direct(p);
    /* nothing sampled yet: only the arena's blocks are not the real allocator's (free(NULL)
     * is its to ignore) */
    if (__builtin_expect(!atomic_load_explicit(&sampled_ever, memory_order_relaxed), 1)) {
        if (__builtin_expect(u - (uintptr_t)arena < ARENA_BYTES || !real.free, 0)) return free_slow(p);
        return real.free(p);
    }
    /* NULL, page-aligned and arena pointers: the slow path */
    if (__builtin_expect((u & 4095) == 0 || u - (uintptr_t)arena < ARENA_BYTES || looks_sampled(u), 0))
        return free_slow(p);
    real.free(p);
}

__attribute__((noinline)) static void *calloc_slow(size_t k, size_t size, size_t n) {
    if (!resolved()) return arena_alloc(n, 16);
    if ((int64_t)d9__heap_left > 0 || !d9_heap_sample_due(n) || too_big(n, HEADER)) return real.calloc(k, size);
    return take_sample(real.calloc(1, n + HEADER), HEADER, n);
}

D9P_EXPORT void *calloc(size_t k, size_t size) {
    size_t n;
    if (__builtin_mul_overflow(k, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (__builtin_expect(atomic_load_explicit(&direct_malloc, memory_order_acquire) != NULL, 1))
        return real.calloc(k, size);
    void *(*fn)(size_t) = atomic_load_explicit(&real_malloc, memory_order_acquire);
    if (__builtin_expect(!fn || d9_heap_countdown(n), 0)) return calloc_slow(k, size, n);
    return real.calloc(k, size);
}

/* An aligned block (align a power of two; the callers check). */
__attribute__((noinline)) static void *aligned_slow(size_t align, size_t n) {
    if (!resolved()) return arena_alloc(n, align);
    if ((int64_t)d9__heap_left > 0 || !d9_heap_sample_due(n)) return real.memalign(align, n);
    size_t off = align >= HEADER ? align : HEADER; /* a multiple of align, room for the header */
    if (too_big(n, off)) return real.memalign(align, n);
    return take_sample(real.memalign(align, n + off), off, n);
}

static inline void *aligned(size_t align, size_t n) {
    if (align < 16) align = 16;
    if (__builtin_expect(atomic_load_explicit(&direct_malloc, memory_order_acquire) != NULL, 1))
        return real.memalign(align, n);
    void *(*fn)(size_t) = atomic_load_explicit(&real_malloc, memory_order_acquire);
    if (__builtin_expect(!fn || d9_heap_countdown(n), 0)) return aligned_slow(align, n);
    return real.memalign(align, n);
}

static bool power_of_two(size_t a) { return a && !(a & (a - 1)); }

/* glibc (2.36) rounds an alignment that is no power of two up, in memalign and aligned_alloc */
static size_t rounded_align(size_t align) {
    if (power_of_two(align)) return align;
    size_t a = 1;
    while (a < align && a < ((size_t)1 << 62)) a <<= 1;
    return a;
}

D9P_EXPORT void *memalign(size_t align, size_t n) { return aligned(rounded_align(align), n); }

D9P_EXPORT void *aligned_alloc(size_t align, size_t n) { return aligned(rounded_align(align), n); }

D9P_EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (!power_of_two(align) || align % sizeof(void *)) return EINVAL;
    int saved = errno;
    void *p = aligned(align, n);
    if (!p) {
        int e = errno;
        errno = saved;
        return e ? e : ENOMEM;
    }
    *out = p;
    errno = saved;
    return 0;
}

static size_t page_size(void) {
    static size_t page;
    if (!page) page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

D9P_EXPORT void *valloc(size_t n) { return aligned(page_size(), n); }

D9P_EXPORT void *pvalloc(size_t n) {
    size_t pg = page_size();
    if (too_big(n, pg)) {
        errno = ENOMEM;
        return NULL;
    }
    return aligned(pg, (n + pg - 1) & ~(pg - 1));
}

__attribute__((noinline)) static size_t usable_slow(void *p) {
    if (!p) return 0;
    if (in_arena(p)) return arena_size(p);
    block_header *h = header_of(p);
    if (h) return usable_of_sampled(p, h);
    return real.usable ? real.usable(p) : 0;
}

/* The same fast path as free's: allocators' users ask it per call (redis' memory accounting,
 * ~8 times a GET under jemalloc): with header_of called and a frame kept for the real call,
 * 36 instructions each, ~290 a request (callgrind, bench/e2e/counted_cost.py). */
D9P_EXPORT size_t malloc_usable_size(void *p) {
    uintptr_t u = (uintptr_t)p;
    size_t (*direct)(void *) = atomic_load_explicit(&direct_usable, memory_order_relaxed);
    if (__builtin_expect(direct != NULL && p && u - (uintptr_t)arena >= ARENA_BYTES, 1)) return direct(p);
    if (__builtin_expect(!atomic_load_explicit(&sampled_ever, memory_order_relaxed), 1)) {
        size_t (*usable)(void *) = real.usable;
        if (__builtin_expect(!p || u - (uintptr_t)arena < ARENA_BYTES || !usable, 0)) return usable_slow(p);
        return usable(p);
    }
    if (__builtin_expect(!atomic_load_explicit(&real_malloc, memory_order_acquire) || !real.usable ||
                             (u & 4095) == 0 || u - (uintptr_t)arena < ARENA_BYTES || looks_sampled(u),
                         0))
        return usable_slow(p);
    return real.usable(p);
}

/* A new block for realloc's data, sampled or not by the countdown. */
static void *moved(void *old, size_t old_size, size_t n) {
    void *p = malloc(n);
    if (p) memcpy(p, old, old_size < n ? old_size : n);
    return p;
}

D9P_EXPORT void *realloc(void *old, size_t n) {
    if (!old) return malloc(n);
    if (__builtin_expect(in_arena(old), 0)) return moved(old, arena_size(old), n);
    /* nothing sampled, nothing counted: the real allocator's block */
    if (__builtin_expect(atomic_load_explicit(&direct_free, memory_order_acquire) != NULL, 1))
        return real.realloc(old, n);
    if (!resolved()) return NULL; /* a block not from the arena before resolving: not ours */
    block_header *h = header_of(old);
    if (__builtin_expect(h != NULL, 0)) {
        if (n == 0) { /* glibc frees and returns NULL */
            release_sampled(old, h);
            return NULL;
        }
        void *p = moved(old, h->size, n);
        if (p) release_sampled(old, h);
        return p;
    }
    if (__builtin_expect(!d9_heap_countdown(n), 1) || !d9_heap_sample_due(n) || too_big(n, HEADER) || !real.usable)
        return real.realloc(old, n);
    /* sampled: the data moves to a block with a header */
    void *p = take_sample(real.malloc(n + HEADER), HEADER, n);
    if (p) {
        size_t have = real.usable(old);
        memcpy(p, old, have < n ? have : n);
        real.free(old);
    }
    return p;
}

D9P_EXPORT void *reallocarray(void *old, size_t k, size_t size) {
    size_t n;
    if (__builtin_mul_overflow(k, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, n);
}
