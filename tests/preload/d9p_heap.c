/* Helper of tests/scripts/test_preload_heap.sh, run under libdial9-preload.so and its heap
 * library (libdial9-preload-heap.so) with heap profiling on. Modes:
 *   leak ROUNDS      leaks 4 KiB blocks from one site under a 3-deep stack (leak_outer ->
 *                    leak_middle -> leak_inner -> malloc) among churn of mixed sizes from
 *                    another site; waits for the recorder first, so every leaked byte is after
 *                    the start; prints "leaked BYTES"
 *   fork             allocates (blocks sampled or not), forks: a child frees the parent's
 *                    blocks, churns and exits; another child execs this program in mode
 *                    "churn"; the parent frees its blocks after them; prints "fork ok"
 *   churn            allocates and frees a while (the exec'd child)
 *   api              every entry point's contract on sampled blocks (run at rate 1); prints
 *                    "api ok", or each broken expectation
 *   dlopen THREADS ROUNDS  threads that dlopen and dlclose a library in a loop while they
 *                    allocate (each round on a new thread, so registration runs under the
 *                    loader's lock too): it ends, which is the test (no deadlock); prints
 *                    "dlopen ok"
 *   usable CALLS     CALLS malloc_usable_size of one unsampled block (the shim's per-call cost,
 *                    counted by test_preload_shim_instructions.sh); prints "usable SUM"
 *   pairs CALLS      CALLS malloc of a small block and its free (counted the same way);
 *                    prints "pairs SUM"
 *   which            who serves the program's allocator: the file that defines malloc, free
 *                    and malloc_usable_size as the program resolves them, LD_PRELOAD as the
 *                    program sees it, and whether jemalloc served a block (its thread.allocated
 *                    counter moved; "absent" without jemalloc) */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wait_for_recorder.h"

#define LEAK_BYTES 4096

static void *volatile sink;
static unsigned long long leaked;

__attribute__((noinline)) static void leak_inner(void) {
    char *p = malloc(LEAK_BYTES);
    memset(p, 1, LEAK_BYTES);
    sink = p; /* never freed */
    leaked += LEAK_BYTES;
    __asm__ volatile("");
}
__attribute__((noinline)) static void leak_middle(void) { leak_inner(); __asm__ volatile(""); }
__attribute__((noinline)) static void leak_outer(void) { leak_middle(); __asm__ volatile(""); }

/* churn: blocks of mixed sizes, and rare large ones, freed a little later */
__attribute__((noinline)) static void churn(uint64_t *rng, void **ring, size_t slots) {
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    size_t i = (size_t)(*rng >> 33) % slots;
    size_t size = 16 + (size_t)((*rng >> 20) % 2048);
    if ((*rng >> 40) % 1000 == 0) size = 256 * 1024;
    free(ring[i]);
    switch ((*rng >> 50) % 4) { /* every entry point */
    case 0: ring[i] = malloc(size); break;
    case 1: ring[i] = calloc(1, size); break;
    case 2: ring[i] = aligned_alloc(64, (size + 63) & ~(size_t)63); break;
    default: if (posix_memalign(&ring[i], 4096, size)) ring[i] = NULL; break;
    }
    if (ring[i]) memset(ring[i], 0, size < 64 ? size : 64);
    if ((*rng >> 45) % 8 == 0 && ring[i]) ring[i] = realloc(ring[i], size * 2);
}

static void churn_for(unsigned long rounds, uint64_t seed) {
    enum { SLOTS = 256 };
    void *ring[SLOTS] = {0};
    for (unsigned long r = 0; r < rounds; r++) churn(&seed, ring, SLOTS);
    for (int i = 0; i < SLOTS; i++) free(ring[i]);
}

static int mode_leak(unsigned long rounds) {
    d9p_wait_for_recorder();
    enum { SLOTS = 256 };
    void *ring[SLOTS] = {0};
    uint64_t rng = 42;
    for (unsigned long r = 0; r < rounds; r++) {
        for (int k = 0; k < 20; k++) churn(&rng, ring, SLOTS);
        if (r % 4 == 0) leak_outer();
    }
    for (int i = 0; i < SLOTS; i++) free(ring[i]);
    printf("leaked %llu\n", leaked);
    return 0;
}

static int mode_fork(const char *self) {
    d9p_wait_for_recorder();
    enum { N = 4096 };
    static void *blocks[N];
    for (int i = 0; i < N; i++) blocks[i] = malloc(64 + (size_t)i * 16); /* some sampled */
    pid_t a = fork();
    if (a == 0) { /* without exec: the parent's blocks, sampled or not, free here */
        for (int i = 0; i < N; i++) free(blocks[i]);
        churn_for(200000, 7);
        _exit(0);
    }
    pid_t b = fork();
    if (b == 0) {
        execl(self, self, "churn", (char *)NULL);
        _exit(127);
    }
    int sa = -1, sb = -1;
    if (a < 0 || b < 0 || waitpid(a, &sa, 0) != a || waitpid(b, &sb, 0) != b) return 1;
    if (!WIFEXITED(sa) || WEXITSTATUS(sa) != 0) {
        printf("child without exec: status %d\n", sa);
        return 1;
    }
    if (!WIFEXITED(sb) || WEXITSTATUS(sb) != 0) {
        printf("child with exec: status %d\n", sb);
        return 1;
    }
    for (int i = 0; i < N; i++) free(blocks[i]);
    churn_for(100000, 9);
    printf("fork ok\n");
    return 0;
}

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("api: line %d: %s\n", __LINE__, #cond);                                 \
            bad++;                                                                         \
        }                                                                                  \
    } while (0)

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return false;
    return true;
}

/* Every entry point's contract, run with DIAL9_MEMORY_SAMPLE_BYTES=1 (every block sampled, so
 * every block carries the shim's header): sizes, zeroing, alignment (page-aligned ones too),
 * realloc's data both ways and between sampled and unsampled, malloc_usable_size, overflows. */
static int mode_api(void) {
    d9p_wait_for_recorder();
    /* a thread that allocated before the start samples again within 256 KiB (its countdown
     * was no draw then: docs/heap-profiling.md); from here on, at rate 1, every block is */
    free(malloc(512 * 1024));
    int bad = 0;
    for (size_t n = 1; n <= 70000; n = n * 3 + 1) {
        unsigned char *p = malloc(n);
        EXPECT(p && ((uintptr_t)p & 15) == 0 && malloc_usable_size(p) >= n);
        memset(p, 0xab, n);
        unsigned char *c = calloc(n, 1);
        EXPECT(c && all_bytes(c, n, 0));
        p = realloc(p, n * 2 + 5); /* grow: the data stays */
        EXPECT(p && all_bytes(p, n, 0xab) && malloc_usable_size(p) >= n * 2 + 5);
        p = realloc(p, n / 2 + 1); /* shrink */
        EXPECT(p && all_bytes(p, n / 2 + 1, 0xab));
        free(c);
        free(p);
    }
    static const size_t aligns[] = {8, 16, 32, 64, 256, 4096, 8192, 65536};
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
        size_t a = aligns[i];
        void *p = NULL;
        EXPECT(posix_memalign(&p, a, 100) == 0 && p && ((uintptr_t)p & (a - 1)) == 0);
        EXPECT(malloc_usable_size(p) >= 100);
        void *q = aligned_alloc(a, a * 2);
        EXPECT(q && ((uintptr_t)q & (a - 1)) == 0);
        void *m = memalign(a, 33);
        EXPECT(m && ((uintptr_t)m & (a - 1)) == 0);
        memset(p, 1, 100);
        p = realloc(p, 5000); /* an aligned sampled block moves */
        EXPECT(p && all_bytes(p, 100, 1));
        free(p);
        free(q);
        free(m);
    }
    long page = sysconf(_SC_PAGESIZE);
    void *v = valloc(10), *pv = pvalloc(10);
    EXPECT(v && ((uintptr_t)v & (uintptr_t)(page - 1)) == 0);
    EXPECT(pv && ((uintptr_t)pv & (uintptr_t)(page - 1)) == 0 && malloc_usable_size(pv) >= (size_t)page);
    free(v);
    free(pv);
    void *p = NULL;
    EXPECT(posix_memalign(&p, 24, 10) == EINVAL && p == NULL);
    /* sizes the compiler does not see (it refuses constants this large) */
    static volatile size_t half = SIZE_MAX / 2, huge = SIZE_MAX - 8;
    EXPECT(calloc(half, 4) == NULL);
    EXPECT(malloc(huge) == NULL);
    void *volatile r = malloc(10);
    EXPECT(reallocarray(r, half, 4) == NULL); /* r is still valid */
    EXPECT(realloc(r, 0) == NULL);            /* frees it */
    free(NULL);
    char *s = strdup("heap"); /* libc's own call to malloc */
    EXPECT(s && !strcmp(s, "heap"));
    free(s);
    if (bad) return 1;
    printf("api ok\n");
    return 0;
}

static const char *g_lib;
static unsigned long g_rounds;

static void *dlopen_loop(void *arg) {
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    for (unsigned long r = 0; r < g_rounds; r++) {
        void *h = dlopen(g_lib, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen %s: %s\n", g_lib, dlerror());
            exit(1);
        }
        churn_for(200, seed + r);
        dlclose(h);
    }
    return NULL;
}

static int mode_dlopen(int threads, unsigned long rounds) {
    static const char *const libs[] = {"libz.so.1", "libzstd.so.1", "libm.so.6"};
    for (size_t i = 0; i < sizeof libs / sizeof *libs && !g_lib; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            g_lib = libs[i];
            dlclose(h);
        }
    }
    if (!g_lib) {
        printf("no library to dlopen\n");
        return 77;
    }
    d9p_wait_for_recorder();
    g_rounds = rounds;
    for (int wave = 0; wave < 5; wave++) { /* new threads each wave */
        pthread_t th[16];
        if (threads > 16) threads = 16;
        for (int i = 0; i < threads; i++)
            if (pthread_create(&th[i], NULL, dlopen_loop, (void *)(uintptr_t)(wave * 100 + i))) return 1;
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    }
    printf("dlopen ok (%s)\n", g_lib);
    return 0;
}

__attribute__((noinline)) static int mode_usable(unsigned long calls) {
    char *p = malloc(100);
    size_t sum = 0;
    for (unsigned long i = 0; i < calls; i++) {
        sum += malloc_usable_size(p);
        __asm__ volatile("" : "+r"(p)); /* one call each, not hoisted */
    }
    free(p);
    printf("usable %zu\n", sum);
    return 0;
}

__attribute__((noinline)) static int mode_pairs(unsigned long calls) {
    size_t sum = 0;
    for (unsigned long i = 0; i < calls; i++) {
        char *p = malloc(48);
        if (!p) return 1;
        __asm__ volatile("" : "+r"(p)); /* a real malloc and free each, not elided */
        sum += (uintptr_t)p & 15;
        free(p);
    }
    printf("pairs %zu\n", sum);
    return 0;
}

static const char *defined_in(const char *name) {
    Dl_info info;
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p || !dladdr(p, &info) || !info.dli_fname) return "?";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

static int mode_which(void) {
    static const char *const fns[] = {"malloc", "free", "malloc_usable_size", "calloc", "realloc"};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) printf("%s %s\n", fns[i], defined_in(fns[i]));
    const char *pre = getenv("LD_PRELOAD");
    printf("LD_PRELOAD %s\n", pre ? pre : "(unset)");
    int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
        (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
    uint64_t before = 0, after = 0;
    size_t len = sizeof before;
    if (!mallctl || mallctl("thread.allocated", &before, &len, NULL, 0) != 0) {
        printf("jemalloc_served absent\n");
        return 0;
    }
    char *p = malloc(1 << 20);
    __asm__ volatile("" : "+r"(p));
    mallctl("thread.allocated", &after, &len, NULL, 0);
    free(p);
    printf("jemalloc_served %s\n", after - before >= (1u << 20) ? "yes" : "no");
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "leak";
    if (!strcmp(mode, "leak")) return mode_leak(argc > 2 ? strtoul(argv[2], NULL, 10) : 20000);
    if (!strcmp(mode, "fork")) return mode_fork("/proc/self/exe");
    if (!strcmp(mode, "api")) return mode_api();
    if (!strcmp(mode, "churn")) {
        churn_for(200000, 11);
        return 0;
    }
    if (!strcmp(mode, "dlopen"))
        return mode_dlopen(argc > 2 ? atoi(argv[2]) : 4, argc > 3 ? strtoul(argv[3], NULL, 10) : 200);
    if (!strcmp(mode, "usable")) return mode_usable(argc > 2 ? strtoul(argv[2], NULL, 10) : 1000);
    if (!strcmp(mode, "pairs")) return mode_pairs(argc > 2 ? strtoul(argv[2], NULL, 10) : 1000);
    if (!strcmp(mode, "which")) return mode_which();
    fprintf(stderr, "usage: d9p_heap leak [ROUNDS] | api | fork | churn | dlopen [THREADS] [ROUNDS] | usable [CALLS] | pairs [CALLS] | which\n");
    return 2;
}
