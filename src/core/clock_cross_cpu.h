/* Whether a tick counter agrees across CPUs: one thread pinned to each CPU, all passing one
 * value through an atomic. Each takes the latest value, reads its own counter after it and
 * swaps its read in only if nothing came between; a read that follows another CPU's value and
 * is smaller is a step back in time, which timestamps taken on two CPUs would show as events
 * out of order. The kernel checks its TSC clocksource so at CPU bring-up; on a kvm-clock guest
 * it does not, and `auto` asks this before it takes the TSC there (docs/clock.md). */
#ifndef D9_CORE_CLOCK_CROSS_CPU_H
#define D9_CORE_CLOCK_CROSS_CPU_H

#include <stdbool.h>
#include <stdint.h>

/* The counter as thread `index` (of the check's threads) reads it: the TSC, or a test's. */
typedef uint64_t (*d9_tick_reader)(void *ctx, unsigned index);

typedef struct d9_cross_cpu_result {
    bool ran;                 /* false: the threads could not be started (why says so) */
    bool passed;              /* every thread saw enough other CPUs' values, none ahead of it */
    bool stepped_back;        /* a read after another CPU's value was smaller */
    unsigned threads;
    uint64_t min_handovers;   /* the fewest reads after another CPU's value, over the threads */
    uint64_t worst_step_back; /* ticks, 0 when none */
    uint64_t elapsed_ns;
    char why[160];            /* a sentence for the metadata */
} d9_cross_cpu_result;

/* Run the check on the `n` CPUs in `cpus` (one thread pinned to each; a CPU may repeat) until
 * each thread has read `handovers` times after another thread's value, a step back is seen,
 * or `max_ns` passed (0: no bound, for tests). `read` NULL: the TSC. The threads are the
 * check's own, with every signal blocked; the caller waits for them. */
void d9_cross_cpu_check(const int *cpus, unsigned n, d9_tick_reader read, void *ctx, uint64_t handovers,
                        uint64_t max_ns, d9_cross_cpu_result *out);

/* The same on every CPU this thread may run on, with the TSC, the handovers per thread scaled
 * to the CPU count so that the whole check stays within `max_ns` on a large host. One CPU:
 * passed, nothing to compare. */
void d9_cross_cpu_check_tsc(uint64_t max_ns, d9_cross_cpu_result *out);

#endif
