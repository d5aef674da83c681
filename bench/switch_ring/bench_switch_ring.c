/* What a per-thread task-clock event costs each context switch, with and without its switch
 * ring (src/core/thread_cpu_switch_ring.h: context_switch, sample_id_all, PERF_SAMPLE_TIME on
 * CLOCK_MONOTONIC, one data page mapped read-only): two threads pinned to one CPU pass a byte
 * back and forth through two pipes, so each round trip is two context switches, each thread
 * switched out once and in once. Arms, interleaved in every repetition (order rotated): no
 * event, no event again (the A/A noise), the task-clock page alone (what DIAL9_THREAD_CPU=page
 * opens), the page with the ring (DIAL9_THREAD_CPU=ring), and the off-CPU source's switch
 * records (a process-wide dummy event with context_switch per CPU, inherited by the threads,
 * as sources/perf_events.c opens it). Per arm: the process's CPU time per round trip
 * (getrusage: user + system, which holds the kernel's switch path; the wall time is printed
 * too but follows the host's load) and its context switches per round trip, median and
 * minimum over the repetitions. The price: ns per switch of one recorded thread (out and in)
 * = (arm - no event) / 2 of each arm's fastest run, since each round trip switches each thread
 * out and in once; its noise: the same figure for the second no-event arm (A/A). `unit` lines give them to
 * bench/e2e/counted_cost.py.
 *   d9_bench_switch_ring [round trips per run (20000)] [repetitions (21)] */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/thread_cpu_clock.h"

enum { NONE, NONE_AGAIN, PAGE, RING, SOURCE, ARMS };
static const char *const ARM_NAMES[ARMS] = {"no event", "no event (A/A)", "page", "page + switch ring",
                                            "off-CPU switch source"};
/* The `unit` keys (counted_cost.py), by arm: none for the controls. */
static const char *const UNIT_KEYS[ARMS] = {NULL, NULL, "tcc_page_switch_ns", "tcc_ring_switch_ns",
                                            "offcpu_source_switch_ns"};
#define MAX_REPS 200

typedef struct run_spec {
    int arm, rounds;
    int to_peer[2], to_main[2];
} run_spec;

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The calling thread's event as the recorder opens it for `arm`, mapped (left open: the thread
 * exits at the run's end, which closes it with the process's fds below). */
static int open_event(int arm) {
    if (arm != PAGE && arm != RING) return -1;
    int fd = d9_task_clock_open(arm == RING);
    if (fd < 0) {
        errno = -fd;
        perror("perf_event_open");
        exit(77);
    }
    size_t bytes = (size_t)(arm == RING ? 2 : 1) * (size_t)sysconf(_SC_PAGESIZE);
    if (mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) {
        perror("mmap");
        exit(77);
    }
    return fd;
}

/* The off-CPU source's switch records: a dummy event of this process on each CPU, inherited by
 * the threads created after it, each CPU's ring (8 pages) mapped read-only (never consumed: the
 * kernel overwrites it). Returns how many it opened; closed by close_source. */
#define MAX_CPUS 256
static int open_source(int *fds) {
    int n = 0, ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
    for (int cpu = 0; cpu < ncpu && cpu < MAX_CPUS; cpu++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_DUMMY;
        a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        a.sample_id_all = 1;
        a.context_switch = 1;
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
        a.inherit = 1;
        a.use_clockid = 1;
        a.clockid = CLOCK_MONOTONIC;
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            perror("perf_event_open (switch source)");
            exit(77);
        }
        if (mmap(NULL, 9 * (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) {
            perror("mmap (switch source)");
            exit(77);
        }
        fds[n++] = fd;
    }
    return n;
}

static void pin_to_cpu0(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static void *peer(void *arg) {
    run_spec *r = arg;
    pin_to_cpu0();
    int fd = open_event(r->arm);
    char c;
    for (int i = 0; i < r->rounds; i++)
        if (read(r->to_peer[0], &c, 1) != 1 || write(r->to_main[1], &c, 1) != 1) break;
    if (fd >= 0) close(fd);
    return NULL;
}

static void *starter(void *arg) {
    run_spec *r = arg;
    pin_to_cpu0();
    int fd = open_event(r->arm);
    char c = 1;
    for (int i = 0; i < r->rounds; i++)
        if (write(r->to_peer[1], &c, 1) != 1 || read(r->to_main[0], &c, 1) != 1) break;
    if (fd >= 0) close(fd);
    return NULL;
}

static double cpu_ns(const struct rusage *u) {
    return ((double)u->ru_utime.tv_sec + (double)u->ru_stime.tv_sec) * 1e9 +
           ((double)u->ru_utime.tv_usec + (double)u->ru_stime.tv_usec) * 1e3;
}

/* One run of `rounds` round trips in `arm`: CPU ns, wall ns and switches per round trip. */
static void run(int arm, int rounds, double *cpu, double *wall, double *switches) {
    run_spec r = {.arm = arm, .rounds = rounds};
    if (pipe(r.to_peer) != 0 || pipe(r.to_main) != 0) exit(1);
    static int source_fds[MAX_CPUS];
    int nsource = arm == SOURCE ? open_source(source_fds) : 0; /* its maps stay: a few per run */
    struct rusage u0, u1;
    getrusage(RUSAGE_SELF, &u0);
    uint64_t t0 = mono_ns();
    pthread_t a, b;
    pthread_create(&a, NULL, peer, &r);
    pthread_create(&b, NULL, starter, &r);
    pthread_join(b, NULL);
    pthread_join(a, NULL);
    uint64_t t1 = mono_ns();
    getrusage(RUSAGE_SELF, &u1);
    for (int i = 0; i < 2; i++) {
        close(r.to_peer[i]);
        close(r.to_main[i]);
    }
    for (int i = 0; i < nsource; i++) close(source_fds[i]);
    *cpu = (cpu_ns(&u1) - cpu_ns(&u0)) / rounds;
    *wall = (double)(t1 - t0) / rounds;
    *switches = (double)(u1.ru_nvcsw - u0.ru_nvcsw + u1.ru_nivcsw - u0.ru_nivcsw) / rounds;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20000, reps = argc > 2 ? atoi(argv[2]) : 21;
    if (rounds < 1 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: d9_bench_switch_ring [round trips >= 1] [repetitions 1..%d]\n", MAX_REPS);
        return 2;
    }
    static double cpu[ARMS][MAX_REPS], wall[ARMS][MAX_REPS], sw[ARMS][MAX_REPS];
    for (int k = 0; k < reps; k++)
        for (int j = 0; j < ARMS; j++) {
            int arm = (j + k) % ARMS;
            run(arm, rounds, &cpu[arm][k], &wall[arm][k], &sw[arm][k]);
        }
    double base = 0, med[ARMS];
    printf("switch ring ping-pong: %d round trips a run, %d runs an arm, both threads on CPU 0\n", rounds, reps);
    for (int j = 0; j < ARMS; j++) {
        qsort(cpu[j], (size_t)reps, sizeof(double), by_value);
        qsort(wall[j], (size_t)reps, sizeof(double), by_value);
        qsort(sw[j], (size_t)reps, sizeof(double), by_value);
        med[j] = cpu[j][reps / 2];
        if (j == NONE) base = med[j];
        printf("%-22s CPU ns a round trip: median %.0f (%+.0f over no event), min %.0f; wall ns median %.0f; "
               "switches a round trip %.2f\n",
               ARM_NAMES[j], med[j], med[j] - base, cpu[j][0], wall[j][reps / 2], sw[j][reps / 2]);
    }
    /* per switch of one recorded thread (out and in): each round trip switches both threads.
     * From the fastest run of each arm: on a shared host the other load only adds (a run of
     * the same arm took 11.5 and 24 us a round trip under a build), and the medians moved by
     * more than the arms differ */
    double aa = (cpu[NONE_AGAIN][0] - cpu[NONE][0]) / 2;
    printf("ns a switch of one recorded thread (out and in), fastest runs, over no event (A/A noise %+.0f):", aa);
    for (int j = PAGE; j < ARMS; j++) printf(" %s %+.0f;", ARM_NAMES[j], (cpu[j][0] - cpu[NONE][0]) / 2);
    printf(" ring over page %+.0f; medians: page %+.0f, ring %+.0f, A/A %+.0f\n", (cpu[RING][0] - cpu[PAGE][0]) / 2,
           (med[PAGE] - base) / 2, (med[RING] - base) / 2, (med[NONE_AGAIN] - base) / 2);
    for (int j = PAGE; j < ARMS; j++) printf("unit %s %.1f\n", UNIT_KEYS[j], (cpu[j][0] - cpu[NONE][0]) / 2);
    printf("unit switch_aa_ns %.1f\n", aa < 0 ? -aa : aa);
    return 0;
}
