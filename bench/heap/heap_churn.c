/* d9_bench_heap_churn THREADS PAIRS: each thread does PAIRS malloc+free pairs over a window of
 * 64 live blocks of 16..1024 bytes (an xorshift picks sizes and slots, so the work is the same
 * in every run), timed with the thread's CPU clock around the loop. Prints "threads T pairs N ns/pair X"
 * (the slowest thread's time over its pairs). See run.sh. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WINDOW 64

static unsigned long g_pairs;
static double g_ns[64];

/* the thread's CPU time: on a shared machine, time the thread spent descheduled is not cost */
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg) {
    size_t id = (size_t)(uintptr_t)arg;
    void *live[WINDOW] = {0};
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (id + 1);
    uint64_t t0 = now_ns();
    for (unsigned long i = 0; i < g_pairs; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t slot = (size_t)(x % WINDOW), size = 16 + (size_t)((x >> 8) % 1009);
        free(live[slot]);
        live[slot] = malloc(size);
        *(volatile char *)live[slot] = 1;
    }
    uint64_t t1 = now_ns();
    for (int i = 0; i < WINDOW; i++) free(live[i]);
    g_ns[id] = (double)(t1 - t0) / (double)g_pairs;
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    g_pairs = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000000;
    if (threads < 1 || threads > 64 || g_pairs == 0) {
        fprintf(stderr, "usage: d9_bench_heap_churn THREADS(1..64) PAIRS\n");
        return 2;
    }
    pthread_t th[64];
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
    double worst = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        if (g_ns[i] > worst) worst = g_ns[i];
    }
    printf("threads %d pairs %lu ns/pair %.2f\n", threads, g_pairs, worst);
    return 0;
}
