/* --only units: the unit costs the counted benchmark (bench/e2e/counted_cost.py) converts its
 * counts with, measured on this host: one read of the clock the hooks read, rdtsc and
 * clock_gettime apart, one system call, one context switch. Each is the fastest of several
 * timed batches: on a shared host a batch that lost its CPU says nothing about the unit.
 * Printed as "unit NAME VALUE" lines, one per unit, for the script to read. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include "bench.h"
#include "core/clock.h"

/* Many short batches: on a loaded host the fastest short batch is one nobody preempted. */
#define UNIT_BATCHES 200

typedef void (*unit_fn)(uint32_t n);

static volatile uint64_t g_sink; /* the reads must not be optimised away */

static void clock_monotonic_reads(uint32_t n) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++) s += bench_now_ns();
    g_sink = s;
}

static void rdtsc_reads(uint32_t n) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++) s += __rdtsc();
    g_sink = s;
}

/* getppid: a system call that does next to nothing, so this is the entry and exit. */
static void system_calls(uint32_t n) {
    for (uint32_t i = 0; i < n; i++) g_sink += (uint64_t)syscall(SYS_getppid);
}

static double fastest_ns_per_op(unit_fn fn, uint32_t n) {
    double best = 1e18;
    fn(n / 4); /* warm */
    for (int b = 0; b < UNIT_BATCHES; b++) {
        uint64_t t0 = bench_now_ns();
        fn(n);
        double ns = (double)(bench_now_ns() - t0) / n;
        if (ns < best) best = ns;
    }
    return best;
}

/* A context switch: two threads on one CPU hand a byte back and forth over two pipes; each
 * hand-over blocks one thread and runs the other, so a round trip is two switches plus four
 * system calls, which are taken off. */
static int g_ping[2], g_pong[2];

static void pin_to_cpu0(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

static void *echo(void *arg) {
    uint32_t n = (uint32_t)(uintptr_t)arg;
    pin_to_cpu0();
    char c;
    for (uint32_t i = 0; i < n; i++) {
        if (read(g_ping[0], &c, 1) != 1 || write(g_pong[1], &c, 1) != 1) break;
    }
    return NULL;
}

static double context_switch_ns(uint32_t n, double syscall_ns) {
    double best = 1e18;
    cpu_set_t was;
    pthread_getaffinity_np(pthread_self(), sizeof was, &was);
    pin_to_cpu0();
    for (int b = 0; b < 400; b++) {
        if (pipe(g_ping) || pipe(g_pong)) return -1;
        pthread_t th;
        if (pthread_create(&th, NULL, echo, (void *)(uintptr_t)n)) return -1;
        char c = 'x';
        uint64_t t0 = bench_now_ns();
        uint32_t i = 0;
        for (; i < n; i++)
            if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) break;
        double ns = (double)(bench_now_ns() - t0) / n;
        pthread_join(th, NULL);
        close(g_ping[0]), close(g_ping[1]), close(g_pong[0]), close(g_pong[1]);
        if (i == n && ns < best) best = ns;
    }
    pthread_setaffinity_np(pthread_self(), sizeof was, &was);
    return (best - 4 * syscall_ns) / 2;
}

void bench_unit_costs(const bench_opts *o) {
    uint32_t n = o->short_mode ? 2000 : 20000; /* per batch */
    d9_clock_mode mode = D9_CLOCK_AUTO;
    if (bench_clock_from_env(&mode) != 0) return;
    bool tsc = mode == D9_CLOCK_TSC || (mode == D9_CLOCK_AUTO && d9_clock_tsc_trustworthy());
    double mono = fastest_ns_per_op(clock_monotonic_reads, n);
    double rdtsc = fastest_ns_per_op(rdtsc_reads, n);
    double sys = fastest_ns_per_op(system_calls, n / 10);
    double cs = context_switch_ns(o->short_mode ? 20 : 50, sys);
    printf("\nUnit costs on this host (fastest of %d batches; bench/e2e/counted_cost.py reads these)\n",
           UNIT_BATCHES);
    printf("unit clock_read_ns %.2f %s (the clock the hooks read)\n", tsc ? rdtsc : mono,
           tsc ? "TSC" : "CLOCK_MONOTONIC");
    printf("unit clock_gettime_ns %.2f\n", mono);
    printf("unit rdtsc_ns %.2f\n", rdtsc);
    printf("unit syscall_ns %.2f (getppid)\n", sys);
    printf("unit context_switch_ns %.2f (pipe ping-pong between two threads on one CPU, system calls taken off)\n", cs);
}
