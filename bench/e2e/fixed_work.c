/* Identical CPU work, for e2e_bench.py's host control: a fixed number of steps of a 64-bit
 * linear congruential generator (no memory traffic, no system call), and the CPU time this
 * thread took for them. On a host whose CPU time is a true measure of work, two runs agree
 * within a fraction of a percent; on a shared or paravirtualized one (a vCPU descheduled by
 * the hypervisor still counts as running when no steal time is reported), they do not, and no
 * cost below that spread can be measured in CPU time there.
 *
 *   fixed_work [STEPS]   (default 50 000 000) -> "cpu_ns=N wall_ns=N" */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
    uint64_t steps = argc > 1 ? strtoull(argv[1], NULL, 10) : 50000000u;
    if (steps == 0) {
        fprintf(stderr, "usage: fixed_work [STEPS > 0]\n");
        return 2;
    }
    volatile uint64_t x = 1; /* volatile: every step is done, none folded away */
    uint64_t cpu0 = ns(CLOCK_THREAD_CPUTIME_ID), wall0 = ns(CLOCK_MONOTONIC);
    for (uint64_t i = 0; i < steps; i++) x = x * 6364136223846793005u + 1442695040888963407u;
    uint64_t cpu1 = ns(CLOCK_THREAD_CPUTIME_ID), wall1 = ns(CLOCK_MONOTONIC);
    printf("cpu_ns=%" PRIu64 " wall_ns=%" PRIu64 "\n", cpu1 - cpu0, wall1 - wall0);
    return 0;
}
