/* Heap sampling of unmodified programs (sources/heap_sampler.h): libdial9-preload-heap.so's
 * malloc, calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc and malloc_usable_size. C++'s operator new and delete call malloc and free in
 * libstdc++, so they are seen here too. This library is preloaded beside the shim only when
 * heap profiling is on at launch (`dial9 run` with DIAL9_MEMORY_PROFILE_ENABLED=1): with it off,
 * the default, the program's allocator is not interposed at all. The countdown and the records
 * are the shim's (preload_heap_link.h).
 *
 * Each call forwards to the next definition (dlsym(RTLD_NEXT): libc's, or an allocator the
 * program links). dlsym itself calls calloc: while this thread resolves them, allocations come
 * from a small static bootstrap arena, which free ignores.
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

#include "preload.h"
#include "preload_heap_link.h"

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

/* The shim's sampler (NULL: the shim is not preloaded, or of another build; every call then
 * passes through) and this thread's countdown in it, NULL until the thread's first slow path. */
static const d9p_heap_link *g_link;
static __thread int64_t *tls_left __attribute__((tls_model("initial-exec")));

static void say(const char *msg) { /* inside malloc: no stdio */
    ssize_t rc = write(2, msg, strlen(msg));
    (void)rc;
}

static void attach(void) {
    d9p_heap_link_fn fn = (d9p_heap_link_fn)dlsym(RTLD_DEFAULT, D9P_HEAP_LINK_SYMBOL);
    const d9p_heap_link *l = fn ? fn() : NULL;
    if (l && l->abi == D9P_HEAP_LINK_ABI) g_link = l;
    else if (l) say("dial9: libdial9-preload-heap.so and libdial9-preload.so are of different builds: no heap profiling\n");
    else say("dial9: libdial9-preload-heap.so is preloaded without libdial9-preload.so: no heap profiling "
             "(dial9 run -m preloads both)\n");
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
        attach();
        atomic_store_explicit(&real_malloc, real.malloc, memory_order_release);
    }
    tls_resolving = false;
}

static inline bool resolved(void) {
    if (__builtin_expect(atomic_load_explicit(&real_malloc, memory_order_acquire) != NULL, 1)) return true;
    resolve();
    return atomic_load_explicit(&real_malloc, memory_order_acquire) != NULL;
}

/* ---------------------------------------------------------------- the countdown */

/* The fast path's count of n bytes (d9_heap_countdown through the thread's pointer): true when
 * the slow path must look, because the countdown ran out or the thread has none yet. */
static inline bool count_out(size_t n) {
    int64_t *left = tls_left;
    if (__builtin_expect(left == NULL, 0)) return true;
    uint64_t l = (uint64_t)*left - n; /* unsigned: wraps, never overflows */
    *left = (int64_t)l;
    return __builtin_expect((int64_t)l <= 0, 0);
}

/* In a slow path, after count_out (resolved): whether the block of n bytes is sampled. A
 * thread's first look takes its countdown and counts this block in it. */
static bool sample_now(size_t n) {
    int64_t *left = tls_left;
    if (!left) {
        if (!g_link || !(left = g_link->countdown())) return false;
        tls_left = left;
        *left = (int64_t)((uint64_t)*left - n);
    }
    return *left <= 0 && g_link->sample_due(n);
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
/* Whether this process ever handed out a sampled block: until then (before the recording
 * starts, or the shim missing), no block has a header to look for, and free and malloc_usable_size go straight to
 * the real allocator after one predictable test (and the arena's range). */
static _Atomic bool sampled_ever;

/* This library's code, whose frames a sample's stack leaves out (found from its own ELF header in
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

/* Hand out the block at base + off (off >= HEADER) of n bytes and record it (g_link is set: a
 * block is sampled only through it). */
static void *take_sample(void *base, size_t off, size_t n) {
    if (!base) return NULL;
    uintptr_t p = (uintptr_t)base + off;
    block_header *h = header_at((void *)p);
    h->base = (uintptr_t)base;
    h->size = n;
    h->ticks = g_link->ticks();
    h->check = MAGIC ^ p;
    if (!atomic_load_explicit(&sampled_ever, memory_order_relaxed))
        atomic_store_explicit(&sampled_ever, true, memory_order_release);
    if ((p & 4095) == 0) atomic_fetch_add_explicit(&page_aligned_live, 1, memory_order_relaxed);
    g_link->record_alloc((void *)p, n, shim_code());
    return (void *)p;
}

/* Give a sampled block back: its free recorded, the header cleared (a later block at the same
 * place must not look sampled), the real block freed. */
static void release_sampled(void *p, block_header *h) {
    g_link->record_free(p, h->size, h->ticks);
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
 * own, out of line, so that the fast path saves no register. The fast path reads real.* only
 * once count_out said the thread has its countdown, which it takes after resolving. */

__attribute__((noinline)) static void *malloc_slow(size_t n) {
    if (!resolved()) return arena_alloc(n, 16);
    if (!sample_now(n) || too_big(n, HEADER)) return real.malloc(n);
    return take_sample(real.malloc(n + HEADER), HEADER, n);
}

D9P_EXPORT void *malloc(size_t n) {
    if (__builtin_expect(count_out(n), 0)) return malloc_slow(n);
    return real.malloc(n);
}

__attribute__((noinline)) static void free_slow(void *p) {
    block_header *h = header_of(p);
    if (h) release_sampled(p, h);
    else if (p && !in_arena(p) && real.free) real.free(p);
}

D9P_EXPORT void free(void *p) {
    uintptr_t u = (uintptr_t)p;
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
    if (!sample_now(n) || too_big(n, HEADER)) return real.calloc(k, size);
    return take_sample(real.calloc(1, n + HEADER), HEADER, n);
}

D9P_EXPORT void *calloc(size_t k, size_t size) {
    size_t n;
    if (__builtin_mul_overflow(k, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (__builtin_expect(count_out(n), 0)) return calloc_slow(k, size, n);
    return real.calloc(k, size);
}

/* An aligned block (align a power of two; the callers check). */
__attribute__((noinline)) static void *aligned_slow(size_t align, size_t n) {
    if (!resolved()) return arena_alloc(n, align);
    if (!sample_now(n)) return real.memalign(align, n);
    size_t off = align >= HEADER ? align : HEADER; /* a multiple of align, room for the header */
    if (too_big(n, off)) return real.memalign(align, n);
    return take_sample(real.memalign(align, n + off), off, n);
}

static inline void *aligned(size_t align, size_t n) {
    if (align < 16) align = 16;
    if (__builtin_expect(count_out(n), 0)) return aligned_slow(align, n);
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
    if (!resolved()) return NULL; /* a block not from the arena before resolving: not ours */
    block_header *h = atomic_load_explicit(&sampled_ever, memory_order_acquire) ? header_of(old) : NULL;
    if (__builtin_expect(h != NULL, 0)) {
        if (n == 0) { /* glibc frees and returns NULL */
            release_sampled(old, h);
            return NULL;
        }
        void *p = moved(old, h->size, n);
        if (p) release_sampled(old, h);
        return p;
    }
    if (__builtin_expect(!count_out(n), 1) || !sample_now(n) || too_big(n, HEADER) || !real.usable)
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
