/* What a recorded thread's perf events cost each of its context switches in the kernel (issue
 * 32): a recorded thread and a peer thread without events (as a server's client, another
 * program or the idle task), pinned to one CPU, pass a byte back and forth through two pipes,
 * so each round trip switches the recorded thread out once and in once. Each arm gives the
 * recorded thread an event (or the process the off-CPU source's): the task-clock page as the recorder opens it (d9_task_clock_attr;
 * DIAL9_THREAD_CPU=page), its variants (not mapped, disabled, cpu-clock, dummy, pinned, kernel
 * time counted), the page with its switch ring (DIAL9_THREAD_CPU=ring), the off-CPU source's
 * switch records (a dummy event with context_switch per CPU, opened before the thread and
 * inherited by it, as sources/perf_events.c opens it), and the source and the page together
 * (what the defaults give a thread), with the source's context-switch stacks event beside them
 * (inherited per CPU, disabled as the pacing keeps it, or enabled); the one-event design (the
 * page and a switch ring of D9_TCC_SOURCE_RING_PAGES the collector consumes as the off-CPU source's records, no
 * inherited event), alone and with a stacks event of the thread's own (disabled or enabled).
 * Per run: its median round trip, timed by the recorded
 * thread (a round trip the host's other work did not interrupt: the pair runs many in a row
 * when it has the CPU, so the load moves the median far less than a mean; the mean CPU time of
 * both threads, getrusage, went from 10 to 36 us a round trip at load 13), and, as a
 * cross-check, that mean CPU time.
 *
 * The price is paired: every run of an arm comes right after or right before (alternating) a
 * run with no event, and the arm's price is the median over the repetitions of (the arm's median
 * round trip - its no-event partner's), in ns per switch of the recorded thread (out and in),
 * with its quartiles. A second no-event arm priced the same way is the A/A noise. `unit` lines
 * give the priced arms to bench/e2e/counted_cost.py.
 *   d9_bench_switch_ring [round trips per run (20000)] [repetitions (21)] [priced]
 *   d9_bench_switch_ring --one ARM ROUNDS      (one run of one arm, for switch_segments.py)
 * `priced`: only the arms counted_cost.py prices (no variants). */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
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
#include "core/thread_cpu_switch_ring.h"

/* One arm: what the recorded thread opens on itself (its task-clock event, changed as said),
 * and whether the process has the off-CPU source's switch events first. */
typedef struct arm {
    const char *id; /* for --one */
    const char *name;
    const char *unit_key; /* counted_cost.py's name for its price; NULL: not priced */
    bool priced;          /* run with `priced` */
    bool event;           /* the thread opens a task-clock event ... */
    bool mapped, ring;    /* ... mapped (with its switch ring after the page) */
    bool disabled, pinned, kernel;
    uint64_t config; /* 0: the recorder's (task clock) */
    bool source;     /* the off-CPU source's inherited switch events, opened before the threads */
    unsigned ring_pages; /* the switch ring's data pages (0: one, as DIAL9_THREAD_CPU=ring maps it) */
    int stacks;          /* the context-switch stacks event: STACKS_* */
    bool stacks_on;      /* ... enabled (else disabled, as the pacing leaves it above its rate) */
} arm;

/* Where an arm's context-switch stacks event is (sources/perf_events.c's K_STACKS: a sample with
 * call chain, registers and stack copy at every switch while enabled). */
enum { STACKS_NONE, STACKS_INHERITED, STACKS_THREAD };

enum { NONE, NONE_AGAIN, PAGE, RING, SOURCE, DEFAULTS, ONE_EVENT, DEFAULTS_STACKS, ONE_EVENT_STACKS };
static const arm ARMS[] = {
    [NONE] = {"none", "no event", NULL, true},
    [NONE_AGAIN] = {"none-again", "no event (A/A)", NULL, true},
    [PAGE] = {"page", "page", "tcc_page_switch_ns", true, true, true},
    [RING] = {"ring", "page + switch ring", "tcc_ring_switch_ns", true, true, true, true},
    [SOURCE] = {"source", "off-CPU switch source", "offcpu_source_switch_ns", true, .source = true},
    [DEFAULTS] = {"source-page", "source + page", "defaults_switch_ns", true, true, true, .source = true},
    /* the one-event design: the page and its switch ring, sized for the collector to consume
     * (D9_TCC_SOURCE_RING_PAGES data pages, read-only: the kernel overwrites, the collector
     * detects an overrun), as the off-CPU source's switch records; no inherited event */
    [ONE_EVENT] = {"one-event", "one event: page + ring as source", "oneevent_switch_ns", true, true, true, true,
                   .ring_pages = D9_TCC_SOURCE_RING_PAGES},
    /* what the defaults give a thread with the stacks event beside: disabled, as the pacing keeps
     * it above DIAL9_SWITCH_STACKS_PER_SEC */
    [DEFAULTS_STACKS] = {"source-page-stacks-off", "source + page + stacks (off)", "defaults_stacks_switch_ns", true,
                         true, true, .source = true, .stacks = STACKS_INHERITED},
    /* the one-event design as the recorder builds it: the stacks event stays the source's,
     * inherited per CPU, paced (here off) */
    [ONE_EVENT_STACKS] = {"one-event-stacks-inherited", "one event + stacks (off)", "oneevent_stacks_switch_ns", true,
                          true, true, true, .ring_pages = D9_TCC_SOURCE_RING_PAGES, .stacks = STACKS_INHERITED},
    {"one-event-stacks-off", "one event + thread's stacks (off)", NULL, false, true, true, true,
     .ring_pages = D9_TCC_SOURCE_RING_PAGES, .stacks = STACKS_THREAD},
    {"one-event-stacks", "one event + thread's stacks (on)", NULL, false, true, true, true,
     .ring_pages = D9_TCC_SOURCE_RING_PAGES, .stacks = STACKS_THREAD, .stacks_on = true},
    {"source-page-stacks", "source + page + stacks (on)", NULL, false, true, true, .source = true,
     .stacks = STACKS_INHERITED, .stacks_on = true},
    {"unmapped", "not mapped", NULL, false, true, false},
    {"disabled", "page, disabled", NULL, false, true, true, .disabled = true},
    {"pinned", "page, pinned", NULL, false, true, true, .pinned = true},
    {"kernel", "page, kernel time too", NULL, false, true, true, .kernel = true},
    {"cpu-clock", "cpu-clock page", NULL, false, true, true, .config = PERF_COUNT_SW_CPU_CLOCK},
    {"dummy", "dummy page", NULL, false, true, true, .config = PERF_COUNT_SW_DUMMY},
};
#define NARMS (int)(sizeof ARMS / sizeof ARMS[0])
#define MAX_REPS 200

typedef struct run_spec {
    const arm *arm;
    int rounds;
    int to_peer[2], to_main[2];
    uint32_t *lap;    /* each round trip's ns, as the recorded thread saw it */
    int recorded_tid; /* for --one's tracer */
} run_spec;

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The calling thread's event for `a`, mapped if it says so (*map, *bytes; unmapped and closed
 * by close_event). -1: the arm has none. */
static int open_event(const arm *a, void **map, size_t *bytes) {
    *map = MAP_FAILED;
    if (!a->event) return -1;
    struct perf_event_attr attr;
    d9_task_clock_attr(&attr, a->ring);
    if (a->config) attr.config = a->config;
    attr.disabled = a->disabled;
    attr.pinned = a->pinned;
    if (a->kernel) attr.exclude_kernel = attr.exclude_hv = 0;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "perf_event_open (%s): %s\n", a->name, strerror(errno));
        exit(77);
    }
    *bytes = (size_t)(a->ring ? 1 + (a->ring_pages ? a->ring_pages : 1) : 1) * (size_t)sysconf(_SC_PAGESIZE);
    if (a->mapped && (*map = mmap(NULL, *bytes, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        perror("mmap");
        exit(77);
    }
    return fd;
}

/* A map keeps its event alive after the close: an event of the main thread left mapped stays
 * in its perf context, and every thread created later inherits it (the source's, one per CPU
 * a run: after some runs every arm's threads carried dozens, and a thread given one more event
 * paid ~10 us a switch for them all). */
static void close_event(int fd, void *map, size_t bytes) {
    if (map != MAP_FAILED) munmap(map, bytes);
    if (fd >= 0) close(fd);
}

/* The off-CPU source's switch records: a dummy event of this thread on each CPU, inherited by
 * the threads created after it (the recorded one, not the peer), each CPU's ring (8 pages)
 * mapped read-only (never consumed: the kernel overwrites it). Returns how many it opened;
 * closed by run (close_event). */
#define MAX_CPUS 256
#define SOURCE_RING_BYTES (9 * (size_t)sysconf(_SC_PAGESIZE))
static int open_source(int *fds, void **maps) {
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
        a.inherit_thread = 1; /* threads, not forked processes */
        a.use_clockid = 1;
        a.clockid = CLOCK_MONOTONIC;
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            perror("perf_event_open (switch source)");
            exit(77);
        }
        if ((maps[n] = mmap(NULL, SOURCE_RING_BYTES, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
            perror("mmap (switch source)");
            exit(77);
        }
        fds[n++] = fd;
    }
    return n;
}

/* The context-switch stacks event as sources/perf_events.c opens it (K_STACKS, x86-64): a sample
 * with call chain, user registers and 2 KiB of user stack at every switch while enabled. */
#define STACKS_RING_BYTES (17 * (size_t)sysconf(_SC_PAGESIZE))
static int open_stacks(bool inherited, bool on, int cpu, void **map) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                    PERF_SAMPLE_CALLCHAIN;
#if defined(__x86_64__)
    a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = 1ull << 6 | 1ull << 7 | 1ull << 8; /* bp, sp, ip (asm/perf_regs.h) */
    a.sample_stack_user = 2048;
#endif
    a.sample_id_all = 1;
    a.exclude_hv = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.disabled = !on;
    a.inherit = inherited;
    a.inherit_thread = inherited;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        perror("perf_event_open (switch stacks)");
        exit(77);
    }
    if ((*map = mmap(NULL, STACKS_RING_BYTES, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        perror("mmap (switch stacks)");
        exit(77);
    }
    return fd;
}

static void pin_to_cpu0(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* The other side: a thread with no event (created before the source's events, so it inherits
 * none: as a server's client, another program or the idle task, which carry none of ours), on
 * CPU 0 too, answering each byte. (A process of its own instead made each switch into it cost
 * ~10 us more than one into this thread, events or not, and the prices noisier.) */
static void *peer(void *arg) {
    const run_spec *r = arg;
    pin_to_cpu0();
    char c;
    for (int i = 0; i < r->rounds; i++)
        if (read(r->to_peer[0], &c, 1) != 1 || write(r->to_main[1], &c, 1) != 1) break;
    return NULL;
}

/* The recorded thread: created after the source's events, so it inherits them as a program's
 * threads do. */
static void *recorded(void *arg) {
    run_spec *r = arg;
    pin_to_cpu0();
    void *map;
    size_t bytes;
    int fd = open_event(r->arm, &map, &bytes);
    void *stacks_map = MAP_FAILED;
    int stacks_fd = r->arm->stacks == STACKS_THREAD ? open_stacks(false, r->arm->stacks_on, -1, &stacks_map) : -1;
    r->recorded_tid = (int)syscall(SYS_gettid);
    char c = 1;
    uint64_t t = mono_ns();
    for (int i = 0; i < r->rounds; i++) {
        if (write(r->to_peer[1], &c, 1) != 1 || read(r->to_main[0], &c, 1) != 1) break;
        uint64_t now = mono_ns();
        r->lap[i] = (uint32_t)(now - t);
        t = now;
    }
    close_event(fd, map, bytes);
    close_event(stacks_fd, stacks_map, STACKS_RING_BYTES);
    return NULL;
}

static double cpu_ns(const struct rusage *u) {
    return ((double)u->ru_utime.tv_sec + (double)u->ru_stime.tv_sec) * 1e9 +
           ((double)u->ru_utime.tv_usec + (double)u->ru_stime.tv_usec) * 1e3;
}

static int by_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* One run of `rounds` round trips in arm `a`: its median round trip (ns), both threads' CPU ns,
 * wall ns and switches per round trip. The median round trip is one the
 * host's other work did not interrupt (the pair runs many in a row when it has the CPU), so
 * the load moves it far less than the means (a run's mean CPU went from 10 to 36 us at load 13). */
static int g_recorded_tid; /* the last run's recorded thread */

static void run(const arm *a, int rounds, double *rt, double *cpu, double *wall, double *switches) {
    static uint32_t *lap;
    if (!lap && !(lap = malloc((size_t)rounds * sizeof *lap))) exit(1);
    run_spec r = {.arm = a, .rounds = rounds, .lap = lap};
    if (pipe(r.to_peer) != 0 || pipe(r.to_main) != 0) exit(1);
    struct rusage u0, u1;
    getrusage(RUSAGE_SELF, &u0);
    uint64_t t0 = mono_ns();
    pthread_t tp, tr;
    pthread_create(&tp, NULL, peer, &r);
    static int source_fds[MAX_CPUS];
    static void *source_maps[MAX_CPUS];
    int nsource = a->source ? open_source(source_fds, source_maps) : 0;
    static int stacks_fds[MAX_CPUS];
    static void *stacks_maps[MAX_CPUS];
    int nstacks = 0;
    int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
    for (int c = 0; a->stacks == STACKS_INHERITED && c < ncpu && c < MAX_CPUS; c++)
        stacks_fds[nstacks] = open_stacks(true, a->stacks_on, c, &stacks_maps[nstacks]), nstacks++;
    pthread_create(&tr, NULL, recorded, &r);
    pthread_join(tr, NULL);
    pthread_join(tp, NULL);
    uint64_t t1 = mono_ns();
    getrusage(RUSAGE_SELF, &u1);
    *cpu = (cpu_ns(&u1) - cpu_ns(&u0)) / rounds;
    g_recorded_tid = r.recorded_tid;
    for (int i = 0; i < 2; i++) {
        close(r.to_peer[i]);
        close(r.to_main[i]);
    }
    for (int i = 0; i < nsource; i++) close_event(source_fds[i], source_maps[i], SOURCE_RING_BYTES);
    for (int i = 0; i < nstacks; i++) close_event(stacks_fds[i], stacks_maps[i], STACKS_RING_BYTES);
    *wall = (double)(t1 - t0) / rounds;
    qsort(lap, (size_t)rounds, sizeof *lap, by_u32);
    *rt = lap[rounds / 2];
    *switches = (double)(u1.ru_nvcsw - u0.ru_nvcsw + u1.ru_nivcsw - u0.ru_nivcsw) / rounds; /* both threads' */
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values (nearest rank). */
static double quantile(const double *v, int n, double q) { return v[(int)(q * (n - 1) + 0.5)]; }

/* The median and quartiles of n values, sorted in place. */
static void spread(double *v, int n, double *q1, double *med, double *q3) {
    qsort(v, (size_t)n, sizeof(double), by_value);
    *q1 = quantile(v, n, 0.25);
    *med = quantile(v, n, 0.5);
    *q3 = quantile(v, n, 0.75);
}

/* --one ID ROUNDS: one run of one arm, for a tracer (switch_segments.py). */
static int run_one(const char *id, int rounds) {
    for (int j = 0; j < NARMS; j++) {
        if (strcmp(ARMS[j].id, id) != 0) continue;
        double rt, cpu, wall, sw;
        run(&ARMS[j], rounds, &rt, &cpu, &wall, &sw);
        printf("%s: median round trip %.0f ns, CPU %.0f ns a round trip; recorded thread %d\n", ARMS[j].name, rt, cpu,
               g_recorded_tid);
        return 0;
    }
    fprintf(stderr, "d9_bench_switch_ring --one: no arm %s\n", id);
    return 2;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--one") == 0) return run_one(argv[2], atoi(argv[3]) > 0 ? atoi(argv[3]) : 1);
    int rounds = argc > 1 ? atoi(argv[1]) : 20000, reps = argc > 2 ? atoi(argv[2]) : 21;
    bool priced_only = argc > 3 && strcmp(argv[3], "priced") == 0;
    if (rounds < 1 || reps < 1 || reps > MAX_REPS || (argc > 3 && !priced_only)) {
        fprintf(stderr, "usage: d9_bench_switch_ring [round trips >= 1] [repetitions 1..%d] [priced]\n", MAX_REPS);
        return 2;
    }
    /* per arm and repetition: the arm's run (median round trip, mean CPU, wall, switches) and its
     * no-event partner's */
    static double rt[NARMS][MAX_REPS], cpu[NARMS][MAX_REPS], wall[NARMS][MAX_REPS], sw[NARMS][MAX_REPS];
    static double prt[NARMS][MAX_REPS], pcpu[NARMS][MAX_REPS];
    double ignored_wall, ignored_sw;
    for (int k = 0; k < reps; k++)
        for (int j = 1; j < NARMS; j++) {
            int i = 1 + (j - 1 + k) % (NARMS - 1); /* order rotated each repetition */
            if (priced_only && !ARMS[i].priced) continue;
            bool partner_first = (k + j) % 2 == 0; /* a drift within the pair cancels over the reps */
            if (partner_first) run(&ARMS[NONE], rounds, &prt[i][k], &pcpu[i][k], &ignored_wall, &ignored_sw);
            run(&ARMS[i], rounds, &rt[i][k], &cpu[i][k], &wall[i][k], &sw[i][k]);
            if (!partner_first) run(&ARMS[NONE], rounds, &prt[i][k], &pcpu[i][k], &ignored_wall, &ignored_sw);
        }
    int nnone = 0;
    static double none_rt[NARMS * MAX_REPS];
    for (int j = 1; j < NARMS; j++)
        for (int k = 0; k < reps && !(priced_only && !ARMS[j].priced); k++) none_rt[nnone++] = prt[j][k];
    double q1, med, q3;
    spread(none_rt, nnone, &q1, &med, &q3);
    printf("context switch ping-pong: %d round trips a run, %d paired runs an arm, a recorded and a peer thread on CPU 0\n",
           rounds, reps);
    printf("%-22s median round trip %.0f ns [quartiles over its %d runs %.0f, %.0f]\n", ARMS[NONE].name, med, nnone, q1,
           q3);
    printf("ns a switch of the recorded thread (out and in) over no event: median of the paired differences of the runs' "
           "median round trips [quartiles]; the same of their mean CPU (both threads) [quartiles]\n");
    static double price[NARMS];
    for (int j = 1; j < NARMS; j++) {
        if (priced_only && !ARMS[j].priced) continue;
        double d[MAX_REPS], dc[MAX_REPS], c1, cm, c3;
        for (int k = 0; k < reps; k++) {
            d[k] = rt[j][k] - prt[j][k];
            dc[k] = cpu[j][k] - pcpu[j][k];
        }
        spread(d, reps, &q1, &price[j], &q3);
        spread(dc, reps, &c1, &cm, &c3);
        qsort(wall[j], (size_t)reps, sizeof(double), by_value);
        qsort(sw[j], (size_t)reps, sizeof(double), by_value);
        printf("%-22s %+6.0f [%+.0f, %+.0f]; CPU %+6.0f [%+.0f, %+.0f]; wall a round trip %.0f; switches %.2f\n",
               ARMS[j].name, price[j], q1, q3, cm, c1, c3, quantile(wall[j], reps, 0.5), quantile(sw[j], reps, 0.5));
    }
    printf("the page over the source (source + page - source): %+.0f; the ring over the page: %+.0f\n",
           price[DEFAULTS] - price[SOURCE], price[RING] - price[PAGE]);
    printf("one event against the defaults (one event - source + page): %+.0f; with the stacks event (off) against the "
           "defaults with it: %+.0f\n",
           price[ONE_EVENT] - price[DEFAULTS], price[ONE_EVENT_STACKS] - price[DEFAULTS_STACKS]);
    for (int j = 1; j < NARMS; j++)
        if (ARMS[j].unit_key) printf("unit %s %.1f\n", ARMS[j].unit_key, price[j]);
    printf("unit switch_aa_ns %.1f\n", price[NONE_AGAIN] < 0 ? -price[NONE_AGAIN] : price[NONE_AGAIN]);
    return 0;
}
