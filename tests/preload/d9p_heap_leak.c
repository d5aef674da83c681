/* A program that leaks from one site under a 3-deep stack (leak_outer -> leak_middle ->
 * leak_inner -> malloc) among churn of other sizes from other sites, for the heap profile's
 * tests (tests/scripts/test_preload_heap.sh). Prints the bytes it leaked, its churn total and
 * what is still live at exit. Usage: d9p_heap_leak [rounds] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEAK_BYTES 4096

static void *volatile sink;
static unsigned long long leaked;

__attribute__((noinline)) static void leak_inner(void) {
    char *p = malloc(LEAK_BYTES);
    memset(p, 1, LEAK_BYTES);
    sink = p; /* never freed */
    leaked += LEAK_BYTES;
}
__attribute__((noinline)) static void leak_middle(void) { leak_inner(); __asm__ volatile(""); }
__attribute__((noinline)) static void leak_outer(void) { leak_middle(); __asm__ volatile(""); }

/* churn: blocks of mixed sizes, freed a little later */
__attribute__((noinline)) static void churn(uint64_t *rng, void **ring, size_t slots) {
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    size_t i = (size_t)(*rng >> 33) % slots;
    size_t size = 16 + (size_t)((*rng >> 20) % 2048);
    if ((*rng >> 40) % 1000 == 0) size = 256 * 1024; /* rare large blocks */
    free(ring[i]);
    ring[i] = malloc(size);
    memset(ring[i], 0, size < 64 ? size : 64);
}

int main(int argc, char **argv) {
    unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
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
