/* d9_bench_governor: what each part of the kernel sources costs (the calibration of the cost
 * governor's table, cost_governor.h), and whether the governor holds a paced switch rate within
 * its budget (docs/kernel-sources.md, "Cost governor").
 *
 * Workload: two threads of this process (both workers: their stacks are all kept and unwound)
 * ping-pong a byte through pipes in bursts of K round trips every millisecond (each round
 * trip: both threads block once, 2 context switches), so the process switches at a chosen rate
 * whatever the machine's speed, as long as it keeps up. A phase's cost is the process's CPU
 * time (all threads: the kernel writes the records and takes the stacks on the switching
 * threads, the collector reads them) minus that of the "base" phase run just before it (the
 * same workload recorded, its polls included, without any kernel source: what the budget
 * governs is the kernel sources), over the same wall time, in ns of CPU per second; medians
 * over the pairs. The first 0.5 s of every phase are not measured (the governor's first
 * evaluations). The row "base vs off" says what recording the polls costs, apart.
 *
 * 1. Parts, at 20 k switches/s, each mode against the base:
 *      context  the perf events open, switch records paused (budget 0.01 %: the governor's
 *               paused level, its events kept open as before it closed them,
 *               d9_perf_keep_events_open_when_paused) -> ns per switch of the perf context alone
 *      closed   the same budget, the paused level as it is: its events closed -> what is
 *               left per switch (nothing of perf on the threads; the governor's getrusage)
 *      records  every switch record, stacks paced at 1/s (not governed) -> ns per switch of
 *               the two switch records, over the context
 *      kernel   every switch record and a stack at every switch (pacing at 10^6/s), each stack
 *               read and dropped (d9_perf_set_stack_unwind(NONE)) -> the kernel's part of a
 *               stack (call chain, registers, 2 KiB copy) and our reading of it
 *      stacks   every switch record and a stack at every switch, unwound and written (every
 *               switch of the ping-pong is inside a poll) -> ns per stack, over the records;
 *               minus the kernel's: ours (CFI unwind, interning, encoding)
 *    plus, outside the ping-pong: a CPU profile at 4999 Hz on a spinning worker (ns per sample
 *    from the work lost) and a loop of schedstat reads (ns per read, the thread's CPU time).
 *    Each is printed beside the table's constant.
 *    and the CPU of one getrusage (the switch rate the governor reads every 250 ms, also while
 *    the events are closed).
 * 2. The governor: at 20 k and 40 k switches/s, no governor (every record, stacks paced at the
 *    default 500/s) vs the default budget (1 %) before (a sampled level keeps its events open
 *    between windows, d9_perf_set_window_closing(NEVER); paused closes them) and after (closed
 *    between windows where the governor's estimate says it pays): measured cost against the
 *    budget, the level each governed phase ended at, the closes it made and the reopen cost it
 *    counted; an A/A row (the base against the base) shows the noise of the host, and the load
 *    average is printed before and after each rate.
 *
 * 3. Levels held (1 in 8, 1 in 32, paused), the events open or closed between windows: the cost
 *    of closing against what it saves, measured in the process's CPU.
 *
 * 4. Thresholds (no measurement: the governor's own estimate with the table's costs): from which
 *    switch rate each level is chosen at the default 1 % budget, for a few reopen costs, and
 *    whether it closes its events between windows there (docs/kernel-sources.md prints it).
 *
 * Usage: d9_bench_governor [--short] [--pairs N] [--only parts|governor|held|thresholds]
 *   (short: 2 pairs of 1.5 s phases; full: 7 pairs of 3 s, or N pairs, at most 16) */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "dial9/dial9.h"
#include "sources/cost_governor.h"
#include "sources/perf_events.h"

#define MAX_PAIRS 16

static char g_scratch[256];
static int g_ping[2], g_pong[2];
static atomic_int g_burst;     /* round trips per millisecond */
static atomic_bool g_stop;
static atomic_ullong g_spins;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu_ns(uint64_t *switches) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (switches) *switches = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* The pinger's CPU per round trip by the switch events' state during the burst (closed, open
 * and disabled, enabled: d9_perf_switch_state), bursts that saw a change left out. */
static _Atomic uint64_t g_state_ns[3], g_state_trips[3];

static uint64_t thread_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *pinger(void *arg) {
    (void)arg;
    d9_worker_begin("bench", 0);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    char c = 'p';
    uint64_t task = 1;
    while (!atomic_load(&g_stop)) {
        int k = atomic_load(&g_burst);
        uint64_t seq0, seq1;
        int st = d9_perf_switch_state(&seq0);
        uint64_t cpu0 = thread_cpu_now();
        for (int i = 0; i < k; i++) {
            d9_poll_begin(task++, D9_HERE);
            if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) return NULL;
            d9_poll_end();
        }
        uint64_t cpu1 = thread_cpu_now();
        if (d9_perf_switch_state(&seq1) == st && seq1 == seq0 && !(seq0 & 1) && st >= 0 && st < 3) {
            atomic_fetch_add(&g_state_ns[st], cpu1 - cpu0);
            atomic_fetch_add(&g_state_trips[st], (uint64_t)k);
        }
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    c = 'q';
    if (write(g_ping[1], &c, 1) != 1) perror("write");
    d9_worker_end();
    return NULL;
}

static void *ponger(void *arg) {
    (void)arg;
    d9_worker_begin("bench", 1);
    char c;
    while (read(g_ping[0], &c, 1) == 1 && c != 'q')
        if (write(g_pong[1], &c, 1) != 1) break;
    d9_worker_end();
    return NULL;
}

static void *spinner(void *arg) {
    (void)arg;
    d9_worker_begin("spin", 0);
    volatile uint64_t x = 0;
    uint64_t n = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
        n++;
    }
    atomic_store(&g_spins, n);
    d9_worker_end();
    return NULL;
}

typedef enum {
    OFF, BASE, CONTEXT, CLOSED, RECORDS, STACKS_KERNEL, STACKS, AA, UNGOVERNED, GOVERNED_OPEN, GOVERNED, CPU_OFF, CPU_ON,
    HELD_PAUSED, HELD32_OPEN, HELD32_CLOSED, HELD8_OPEN, HELD8_CLOSED, MODES
} mode;
static const char *mode_name[MODES] = {"off", "base vs off", "context", "closed", "records", "kernel", "stacks", "A/A base-base",
                                       "no governor", "gov 1 %, before", "gov 1 %, after", "spin, off", "spin, 4999 Hz",
                                       "held paused", "held 1/32 open", "held 1/32 closed", "held 1/8 open",
                                       "held 1/8 closed"};

typedef struct phase_result {
    double cpu_ns_per_s;  /* process CPU / wall */
    double switches_per_s;
    double stacks_per_s, cpu_samples_per_s;
    double unwound_per_s; /* context-switch stacks unwound (inside polls) */
    double spins_per_cpu_ns; /* spin phases: work per ns of process CPU */
    int level;         /* the governor's level at the end (GOVERNED) */
    uint64_t changes;
    uint64_t closes;   /* closes of the switch events (paused, between windows) */
    uint64_t reopen_cost_ns; /* what the governor counted for a close and a reopen, at the end */
    double trip_ns[3];       /* the pinger's CPU per round trip by switch events' state ... */
    double trips[3];         /* ... over this many round trips */
} phase_result;

static void start_recording(mode m) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = g_scratch;
    cfg.symbolize = false;
    cfg.task_dumps = false;
    cfg.schedstat = false; /* measured on its own below */
    cfg.max_total_size = 256ull * 1024 * 1024;
    cfg.overhead_budget_pct = m == GOVERNED || m == GOVERNED_OPEN ? 1.0 : m == CONTEXT || m == CLOSED ? 0.01 : 0;
    d9_perf_keep_events_open_when_paused(m == CONTEXT); /* paused as before it closed its events */
    d9_perf_set_window_closing(m == GOVERNED_OPEN || m == HELD32_OPEN || m == HELD8_OPEN ? D9_PERF_CLOSE_NEVER
                               : m == HELD32_CLOSED || m == HELD8_CLOSED           ? D9_PERF_CLOSE_ALWAYS
                                                                                   : D9_PERF_CLOSE_AUTO);
    d9_perf_hold_governor_level(m == HELD_PAUSED                          ? D9_GOV_LEVEL_PAUSED
                                : m == HELD32_OPEN || m == HELD32_CLOSED ? D9_GOV_LEVEL_SAMPLED_LAST
                                : m == HELD8_OPEN || m == HELD8_CLOSED   ? D9_GOV_LEVEL_SAMPLED_FIRST + 2
                                                                         : -1);
    if (m >= HELD_PAUSED) cfg.overhead_budget_pct = 1.0;
    if (m == RECORDS) cfg.switch_stacks_per_sec = 1;
    if (m == STACKS || m == STACKS_KERNEL) cfg.switch_stacks_per_sec = 1000000;
    /* the kernel's part of a stack: taken and read, never unwound nor written */
    d9_perf_set_stack_unwind(m == STACKS_KERNEL ? D9_PERF_UNWIND_NONE : D9_PERF_UNWIND_IN_POLLS);
    if (m == BASE || m == AA) cfg.schedule_profile = false; /* the polls recorded, no kernel source */
    if (m == CPU_ON) {
        cfg.schedule_profile = false;
        cfg.cpu_profile = true;
        cfg.cpu_sample_hz = 4999;
    }
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_start: %s\n", d9_last_error());
        exit(1);
    }
}

static phase_result run_phase(mode m, double secs) {
    phase_result r = {0, 0, 0, 0, 0, 0, -1, 0, 0, 0, {0, 0, 0}, {0, 0, 0}};
    bool spin = m == CPU_OFF || m == CPU_ON;
    bool recording = m != OFF && m != CPU_OFF;
    if (recording) start_recording(m);
    atomic_store(&g_stop, false);
    uint64_t c_start = process_cpu_ns(NULL);
    pthread_t a, b;
    if (spin) {
        pthread_create(&a, NULL, spinner, NULL);
    } else {
        pthread_create(&b, NULL, ponger, NULL);
        pthread_create(&a, NULL, pinger, NULL);
    }
    struct timespec warm = {0, 500000000};
    nanosleep(&warm, NULL);
    uint64_t sw0, sw1, st0 = 0, st1 = 0, cs0 = 0, cs1 = 0;
    d9_perf_samples_read(&st0, &cs0);
    uint64_t uw0 = d9_perf_stacks_unwound();
    for (int i = 0; i < 3; i++) {
        atomic_store(&g_state_ns[i], 0);
        atomic_store(&g_state_trips[i], 0);
    }
    uint64_t t0 = now_ns(), c0 = process_cpu_ns(&sw0);
    struct timespec run = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&run, NULL);
    uint64_t t1 = now_ns(), c1 = process_cpu_ns(&sw1);
    d9_perf_samples_read(&st1, &cs1);
    uint64_t uw1 = d9_perf_stacks_unwound();
    for (int i = 0; i < 3; i++) {
        r.trips[i] = (double)atomic_load(&g_state_trips[i]);
        r.trip_ns[i] = r.trips[i] > 0 ? (double)atomic_load(&g_state_ns[i]) / r.trips[i] : 0;
    }
    if (m == GOVERNED || m == GOVERNED_OPEN || m >= HELD_PAUSED) {
        uint64_t reopens, records;
        d9_perf_governor_now(&r.level, &r.changes);
        d9_perf_switch_events_now(&r.closes, &reopens, &records);
        r.reopen_cost_ns = d9_perf_reopen_cost_ns();
    }
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    if (!spin) pthread_join(b, NULL);
    uint64_t c2 = process_cpu_ns(NULL);
    if (recording) d9_stop();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", g_scratch);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not clean %s\n", g_scratch);
    double wall = (double)(t1 - t0);
    r.cpu_ns_per_s = (double)(c1 - c0) / wall * 1e9;
    r.switches_per_s = (double)(sw1 - sw0) * 1e9 / wall;
    r.stacks_per_s = !recording ? 0 : (double)(st1 - st0) * 1e9 / wall;
    r.cpu_samples_per_s = !recording ? 0 : (double)(cs1 - cs0) * 1e9 / wall;
    r.unwound_per_s = !recording ? 0 : (double)(uw1 - uw0) * 1e9 / wall;
    /* the spinner's work counts from its start: over the whole phase's CPU */
    if (spin) r.spins_per_cpu_ns = (double)atomic_load(&g_spins) / (double)(c2 > c_start ? c2 - c_start : 1);
    return r;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(const double *in, int n) {
    double v[MAX_PAIRS];
    memcpy(v, in, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double min_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

static double max_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* The calling thread's CPU per pread of its schedstat file (what a park or unpark pays). */
static double schedstat_read_ns(void) {
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[96];
    struct timespec a, b;
    const int n = 200000;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (int i = 0; i < n; i++)
        if (pread(fd, buf, sizeof buf, 0) <= 0) break;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    close(fd);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
}

/* The calling thread's CPU per getrusage(RUSAGE_SELF) (it sums every thread of the process). */
static double getrusage_ns(void) {
    struct rusage ru;
    struct timespec a, b;
    const int n = 100000;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (int i = 0; i < n; i++) getrusage(RUSAGE_SELF, &ru);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
}

static void parts(int pairs, double secs) {
    atomic_store(&g_burst, 20000 / 2 / 1000);
    double cost[MODES][MAX_PAIRS], swr[MODES][MAX_PAIRS], stk[MAX_PAIRS], kstk[MAX_PAIRS], unw[MAX_PAIRS];
    for (int p = 0; p < pairs; p++) {
        for (int m = CONTEXT; m <= STACKS; m++) {
            phase_result off = run_phase(BASE, secs);
            phase_result on = run_phase((mode)m, secs);
            cost[m][p] = on.cpu_ns_per_s - off.cpu_ns_per_s;
            swr[m][p] = on.switches_per_s;
            swr[OFF][p] = off.switches_per_s;
            if (m == STACKS) stk[p] = on.stacks_per_s;
            if (m == STACKS) unw[p] = on.unwound_per_s;
            if (m == STACKS_KERNEL) kstk[p] = on.stacks_per_s;
        }
    }
    printf("\n1. parts at 20 k switches/s target (%d pairs of %.1f s): ns of CPU per unit\n", pairs, secs);
    printf("%-9s %12s %14s %14s %14s  %s\n", "mode", "switches/s", "cost ns/s med", "min", "max", "what is on");
    double sw = median(swr[OFF], pairs);
    double ctx = median(cost[CONTEXT], pairs), rec = median(cost[RECORDS], pairs), st = median(cost[STACKS], pairs);
    double stacks = median(stk, pairs), kst = median(cost[STACKS_KERNEL], pairs), kstacks = median(kstk, pairs);
    for (int m = CONTEXT; m <= STACKS; m++)
        printf("%-9s %12.0f %14.0f %14.0f %14.0f  %s\n", mode_name[m], median(swr[m], pairs), median(cost[m], pairs),
               min_of(cost[m], pairs), max_of(cost[m], pairs),
               m == CONTEXT  ? "paused, events kept open (before)"
               : m == CLOSED ? "paused, events closed (now)"
               : m == RECORDS ? "every switch record, events open"
               : m == STACKS_KERNEL ? "+ a stack at every switch, read and dropped (the kernel's part)"
                              : "+ a stack at every switch, unwound and written (every switch is in a poll)");
    /* the per-unit figures, each over the mode below it */
    double ns_ctx = sw > 0 ? ctx / sw : 0, ns_rec = sw > 0 ? (rec - ctx) / sw : 0;
    double ns_stack = stacks > 0 ? (st - rec) / stacks : 0;
    printf("  context: %6.0f ns per switch            (table context %.0f)\n", ns_ctx, d9_gov_costs_measured.context);
    printf("  closed:  %6.0f ns per switch            (paused now: nothing of perf on the threads)\n",
           sw > 0 ? median(cost[CLOSED], pairs) / sw : 0);
    printf("  records: %6.0f ns per switch            (table records %.0f)\n", ns_rec, d9_gov_costs_measured.records);
    double ns_kernel = kstacks > 0 ? (kst - rec) / kstacks : 0;
    printf("  stack:   %6.0f ns per stack, %.0f stacks/s, %.0f unwound/s (table stack %.0f + stack_unwind %.0f)\n",
           ns_stack, stacks, median(unw, pairs), d9_gov_costs_measured.stack, d9_gov_costs_measured.stack_unwind);
    printf("    kernel: %6.0f ns per stack (call chain, registers, 2 KiB copy, reading it), %.0f stacks/s (table stack %.0f)\n",
           ns_kernel, kstacks, d9_gov_costs_measured.stack);
    double unwound = median(unw, pairs);
    printf("    ours:   %6.0f ns per stack (CFI unwind, interning, writing); per stack unwound (%.0f %% of them: the\n"
           "            pinger's, inside polls; the ponger's keep their kernel frames): %.0f   (table stack_unwind %.0f)\n",
           ns_stack - ns_kernel, stacks > 0 ? 100 * unwound / stacks : 0,
           unwound > 0 ? (ns_stack - ns_kernel) * stacks / unwound : 0, d9_gov_costs_measured.stack_unwind);
    printf("  shares at 10 k switches/s, stacks paced at 500/s: context %.2f %%, records %.2f %%, stacks %.2f %% of a CPU\n",
           10000 * ns_ctx / 1e7, 10000 * ns_rec / 1e7, 500 * ns_stack / 1e7);

    double lost[MAX_PAIRS], samples[MAX_PAIRS];
    for (int p = 0; p < pairs; p++) {
        phase_result off = run_phase(CPU_OFF, secs);
        phase_result on = run_phase(CPU_ON, secs);
        /* the work a sample costs: CPU per spin went up by this share, over the samples taken */
        double share = off.spins_per_cpu_ns > 0 ? 1 - on.spins_per_cpu_ns / off.spins_per_cpu_ns : 0;
        samples[p] = on.cpu_samples_per_s;
        lost[p] = samples[p] > 0 ? share * on.cpu_ns_per_s / samples[p] : 0;
    }
    printf("  cpu sample: %6.0f ns per sample (min %.0f, max %.0f), %.0f samples/s (table cpu_sample %.0f)\n",
           median(lost, pairs), min_of(lost, pairs), max_of(lost, pairs), median(samples, pairs), d9_gov_costs_measured.cpu_sample);
    double rd[MAX_PAIRS];
    for (int p = 0; p < pairs; p++) rd[p] = schedstat_read_ns();
    printf("  schedstat read: %4.0f ns per read (min %.0f, max %.0f)   (table schedstat %.0f)\n",
           median(rd, pairs), min_of(rd, pairs), max_of(rd, pairs), d9_gov_costs_measured.schedstat);
    for (int p = 0; p < pairs; p++) rd[p] = getrusage_ns();
    printf("  getrusage: %4.0f ns per call (min %.0f, max %.0f), the governor's rate, 4 a second: %.5f %% of a CPU\n",
           median(rd, pairs), min_of(rd, pairs), max_of(rd, pairs), 4 * median(rd, pairs) / 1e7);
}

static void print_load(const char *when) {
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    printf("load average %s: %s\n", when, buf);
}

static void governor(int pairs, double secs) {
    printf("\n2. the governor: cost as %% of one CPU (process CPU with the kernel sources minus the base, the polls recorded without them), %d pairs of %.1f s\n",
           pairs, secs);
    printf("(before: a sampled level keeps its events open between windows; after: closed between them where the\n"
           " estimate says it pays; per pair: level at the end (level changes, closes of the events, reopen cost counted))\n");
    printf("%-10s %-16s %12s %12s %10s %10s  %s\n", "target/s", "mode", "switches/s", "cost median", "min", "max",
           "governor level at the end (changes)");
    const int rates[] = {20000, 40000};
    for (size_t ri = 0; ri < sizeof rates / sizeof rates[0]; ri++) {
        atomic_store(&g_burst, rates[ri] / 2 / 1000); /* 2 switches per round trip, per ms */
        print_load("before");
        double cost[MODES][MAX_PAIRS], swr[MODES][MAX_PAIRS];
        phase_result gov[MAX_PAIRS], gov_open[MAX_PAIRS];
        for (int p = 0; p < pairs; p++) {
            for (int m = BASE; m <= GOVERNED; m++) {
                if (m > BASE && m < AA) continue;
                phase_result off = run_phase(m == BASE ? OFF : BASE, secs);
                phase_result on = run_phase((mode)m, secs);
                cost[m][p] = (on.cpu_ns_per_s - off.cpu_ns_per_s) / 1e7;
                swr[m][p] = on.switches_per_s;
                swr[OFF][p] = off.switches_per_s;
                if (m == GOVERNED) gov[p] = on;
                else if (m == GOVERNED_OPEN) gov_open[p] = on;
            }
        }
        for (int m = BASE; m <= GOVERNED; m++) {
            if (m > BASE && m < AA) continue;
            double med = median(cost[m], pairs);
            printf("%-10d %-16s %12.0f %11.2f%% %9.2f%% %9.2f%%  ", rates[ri], mode_name[m], median(swr[m], pairs), med,
                   min_of(cost[m], pairs), max_of(cost[m], pairs));
            if (m == GOVERNED || m == GOVERNED_OPEN) {
                const phase_result *g = m == GOVERNED ? gov : gov_open;
                for (int p = 0; p < pairs; p++) {
                    uint32_t n = d9_gov_one_in(g[p].level);
                    printf("%s%s", p ? ", " : "", d9_gov_mode_name(g[p].level));
                    if (n > 1) printf(" 1/%u", n);
                    printf(" (%" PRIu64 ", %" PRIu64 ", %.2f ms)", g[p].changes, g[p].closes, (double)g[p].reopen_cost_ns / 1e6);
                }
                printf("; budget 1.00%%: %s\n", med <= 1.0 ? "within" : "OVER");
            } else {
                printf("\n");
            }
        }
        printf("%-10d %-16s %12.0f\n", rates[ri], mode_name[OFF], median(swr[OFF], pairs));
        print_load("after");
    }
}

/* 3. Levels held (d9_perf_hold_governor_level), open or closed between windows: what closing
 * costs and saves in the process's CPU, beside what the governor counted for a cycle. */
static void held(int pairs, double secs) {
    printf("\n3. levels held, events open or closed between windows: cost as %% of one CPU over the base, %d pairs of %.1f s\n",
           pairs, secs);
    printf("%-10s %-16s %12s %12s %10s %10s  %s\n", "target/s", "mode", "switches/s", "cost median", "min", "max",
           "closes a second, cycle counted (median)");
    const int rates[] = {20000, 40000};
    for (size_t ri = 0; ri < sizeof rates / sizeof rates[0]; ri++) {
        atomic_store(&g_burst, rates[ri] / 2 / 1000);
        print_load("before");
        double cost[MODES][MAX_PAIRS], swr[MODES][MAX_PAIRS], closes[MODES][MAX_PAIRS], cyc[MODES][MAX_PAIRS];
        double extra[MODES][3][MAX_PAIRS], share[MODES][3][MAX_PAIRS], stk[MODES][MAX_PAIRS];
        for (int p = 0; p < pairs; p++)
            for (int m = HELD_PAUSED; m <= HELD8_CLOSED; m++) {
                phase_result off = run_phase(BASE, secs);
                phase_result on = run_phase((mode)m, secs);
                cost[m][p] = (on.cpu_ns_per_s - off.cpu_ns_per_s) / 1e7;
                swr[m][p] = on.switches_per_s;
                closes[m][p] = (double)on.closes / (secs + 0.5);
                cyc[m][p] = (double)on.reopen_cost_ns / 1e6;
                stk[m][p] = on.stacks_per_s;
                double base_ns = 0, base_trips = 0, all = 0;
                for (int i = 0; i < 3; i++) {
                    base_ns += off.trip_ns[i] * off.trips[i];
                    base_trips += off.trips[i];
                    all += on.trips[i];
                }
                for (int i = 0; i < 3; i++) {
                    extra[m][i][p] = on.trips[i] > 0 && base_trips > 0 ? on.trip_ns[i] - base_ns / base_trips : 0;
                    share[m][i][p] = all > 0 ? on.trips[i] / all : 0;
                }
            }
        for (int m = HELD_PAUSED; m <= HELD8_CLOSED; m++)
            printf("%-10d %-16s %12.0f %11.2f%% %9.2f%% %9.2f%%  %.2f/s, %.2f ms\n", rates[ri], mode_name[m],
                   median(swr[m], pairs), median(cost[m], pairs), min_of(cost[m], pairs), max_of(cost[m], pairs),
                   median(closes[m], pairs), median(cyc[m], pairs));
        printf("  the pinger's CPU per round trip over the base's, by the switch events' state (share of round trips):\n");
        for (int m = HELD_PAUSED; m <= HELD8_CLOSED; m++) {
            printf("  %-16s %5.0f stacks/s", mode_name[m], median(stk[m], pairs));
            static const char *state_name[3] = {"closed", "open", "enabled"};
            for (int i = 0; i < 3; i++)
                printf("  %s %+6.0f ns (%4.1f %%)", state_name[i], median(extra[m][i], pairs), 100 * median(share[m][i], pairs));
            printf("\n");
        }
        double residual[MAX_PAIRS];
        for (int p = 0; p < pairs; p++) residual[p] = extra[HELD32_CLOSED][0][p] - extra[HELD_PAUSED][0][p];
        printf("  closed between windows, over paused: %+.0f ns per switch (min %+.0f, max %+.0f)   (table closed_context %.0f)\n",
               median(residual, pairs), min_of(residual, pairs), max_of(residual, pairs),
               d9_gov_costs_measured.closed_context);
        double unclone[MAX_PAIRS];
        for (int p = 0; p < pairs; p++) unclone[p] = extra[HELD32_CLOSED][2][p] - extra[HELD32_OPEN][2][p];
        printf("  in a window, events reopened over events inherited: %+.0f ns per switch (min %+.0f, max %+.0f)\n"
               "    (table window_context %.0f - context %.0f = %+.0f)\n",
               median(unclone, pairs), min_of(unclone, pairs), max_of(unclone, pairs), d9_gov_costs_measured.window_context,
               d9_gov_costs_measured.context, d9_gov_costs_measured.window_context - d9_gov_costs_measured.context);
        print_load("after");
    }
}

/* 4. The level d9_gov_step picks first for a steady rate (stacks at the default pacing, no CPU
 * profile, schedstat not counted) and the rate from which each level starts. */
static d9_gov_input steady(double switches, double reopen_ns, bool closing) {
    return (d9_gov_input){.budget_ns_per_s = 1e7, .switches_per_s = switches, .stacks_cap_per_s = 500,
                          .closing_allowed = closing, .reopen_ns = reopen_ns, .costs = d9_gov_costs_measured,
                          .thin_stacks_at_full = true};
}

static int level_at(double switches, double reopen_ns, bool closing) {
    d9_gov_input in = steady(switches, reopen_ns, closing);
    d9_gov_state st = {.level = D9_GOV_LEVEL_FULL};
    d9_gov_step(&st, &in);
    return st.level;
}

static void thresholds(void) {
    printf("\n== thresholds at a 1 %% budget (the estimate with the table's costs; stacks paced at 500/s)\n");
    printf("| a cycle (close + reopen) | 1 in 2 from | 1 in 4 | 1 in 8 | 1 in 16 | 1 in 32 | paused from |\n");
    printf("|---|---|---|---|---|---|---|\n");
    static const double cycles_ms[] = {-1, 0.5, 1, 2, 4};
    for (size_t c = 0; c < sizeof cycles_ms / sizeof cycles_ms[0]; c++) {
        bool closing = cycles_ms[c] > 0;
        double reopen = closing ? cycles_ms[c] * 1e6 : 0;
        if (closing) printf("| %g ms |", cycles_ms[c]);
        else printf("| never closed between windows |");
        for (int l = D9_GOV_LEVEL_SAMPLED_FIRST; l <= D9_GOV_LEVEL_PAUSED; l++) {
            double from = -1;
            for (double r = 100; r <= 400000 && from < 0; r += 100)
                if (level_at(r, reopen, closing) >= l) from = r;
            if (from < 0) {
                printf(" above 400 k |");
                continue;
            }
            d9_gov_input in = steady(from, reopen, closing);
            bool closed = l < D9_GOV_LEVEL_PAUSED && d9_gov_closes_between(&in, l);
            printf(" %.1f k%s%s |", from / 1000, l == D9_GOV_LEVEL_SAMPLED_FIRST ? "/s" : "", closed ? ", closed" : "");
        }
        printf("\n");
    }
}

int main(int argc, char **argv) {
    bool short_mode = false;
    const char *only = NULL;
    int pairs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--short") == 0) short_mode = true;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) pairs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: d9_bench_governor [--short] [--pairs N (1-%d)] [--only parts|governor|held|thresholds]\n",
                    MAX_PAIRS);
            return 2;
        }
    }
    if (pairs < 1 || pairs > MAX_PAIRS) pairs = short_mode ? 2 : 7;
    double secs = short_mode ? 1.5 : 3.0;
    snprintf(g_scratch, sizeof g_scratch, "/tmp/d9bench-governor-XXXXXX");
    if (!mkdtemp(g_scratch) || pipe(g_ping) != 0 || pipe(g_pong) != 0) {
        perror("setup");
        return 1;
    }
    printf("d9_bench_governor%s\n", short_mode ? " --short" : "");
    if (!only || strcmp(only, "parts") == 0) parts(pairs, secs);
    if (!only || strcmp(only, "governor") == 0) governor(pairs, secs);
    if (!only || strcmp(only, "held") == 0) held(pairs, secs);
    if (!only || strcmp(only, "thresholds") == 0) thresholds();
    rmdir(g_scratch);
    return 0;
}
