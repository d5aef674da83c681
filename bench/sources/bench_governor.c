/* d9_bench_governor: what the context-switch source costs at a paced switch rate, with and
 * without the cost governor, against the budget (docs/kernel-sources.md, "Cost governor").
 *
 * Workload: two threads of this process (both record: one is a worker polling, the other
 * wakes) ping-pong a byte through pipes in bursts of K round trips every millisecond (each
 * round trip: both threads block once, 2 context switches), so the process switches at a
 * chosen rate (20 k and 40 k per second) whatever the machine's speed, as long as it keeps up.
 * For each rate, phases alternate: recording off, recording with the governor off
 * (DIAL9_OVERHEAD_BUDGET_PCT=0: every record, every stack up to the pacing), recording under
 * the default budget (1 %). A phase's cost is the process's CPU time (all threads: the kernel
 * writes the records on the switching threads, the collector reads them) minus the next
 * "off" phase's, over the same wall time, as a share of one CPU; medians over the pairs.
 * The first 0.5 s of every phase are not measured (the governor's first evaluations).
 *
 * It also prints the measured CPU per switch with every record (the calibration of
 * D9_GOV_NS_CONTEXT + D9_GOV_NS_RECORDS, cost_governor.h) and the levels the governor chose.
 *
 * Usage: d9_bench_governor [--short]   (short: 2 pairs of 1.5 s phases per rate; full: 7 of 3 s) */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dial9/dial9.h"
#include "sources/cost_governor.h"
#include "sources/perf_events.h"

static char g_scratch[256];
static int g_ping[2], g_pong[2];
static atomic_int g_burst;     /* round trips per millisecond */
static atomic_bool g_stop;

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

static void *pinger(void *arg) {
    (void)arg;
    d9_worker_begin("bench", 0);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    char c = 'p';
    uint64_t task = 1;
    while (!atomic_load(&g_stop)) {
        int k = atomic_load(&g_burst);
        for (int i = 0; i < k; i++) {
            d9_poll_begin(task++, D9_HERE);
            if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) return NULL;
            d9_poll_end();
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
    d9_wake(0); /* a thread that records: its switch records are kept */
    char c;
    while (read(g_ping[0], &c, 1) == 1 && c != 'q')
        if (write(g_pong[1], &c, 1) != 1) break;
    return NULL;
}

typedef enum { OFF, UNGOVERNED, GOVERNED, MODES } mode;
static const char *mode_name[MODES] = {"off", "no governor", "governor 1 %"};

typedef struct phase_result {
    double cpu_share;  /* process CPU / wall */
    double switches_per_s;
    int level;         /* the governor's level at the end (GOVERNED) */
    uint64_t changes;
} phase_result;

static phase_result run_phase(mode m, double secs) {
    phase_result r = {0, 0, -1, 0};
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = g_scratch;
    cfg.symbolize = false;
    cfg.task_dumps = false;
    cfg.max_total_size = 256ull * 1024 * 1024;
    cfg.overhead_budget_pct = m == GOVERNED ? 1.0 : 0;
    if (m != OFF && d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_start: %s\n", d9_last_error());
        exit(1);
    }
    atomic_store(&g_stop, false);
    pthread_t a, b;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    struct timespec warm = {0, 500000000};
    nanosleep(&warm, NULL);
    uint64_t sw0, sw1;
    uint64_t t0 = now_ns(), c0 = process_cpu_ns(&sw0);
    struct timespec run = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&run, NULL);
    uint64_t t1 = now_ns(), c1 = process_cpu_ns(&sw1);
    if (m == GOVERNED) d9_perf_governor_now(&r.level, &r.changes);
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    if (m != OFF) d9_stop();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", g_scratch);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not clean %s\n", g_scratch);
    r.cpu_share = (double)(c1 - c0) / (double)(t1 - t0);
    r.switches_per_s = (double)(sw1 - sw0) * 1e9 / (double)(t1 - t0);
    return r;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    bool short_mode = argc > 1 && strcmp(argv[1], "--short") == 0;
    int pairs = short_mode ? 2 : 7;
    double secs = short_mode ? 1.5 : 3.0;
    snprintf(g_scratch, sizeof g_scratch, "/tmp/d9bench-governor-XXXXXX");
    if (!mkdtemp(g_scratch) || pipe(g_ping) != 0 || pipe(g_pong) != 0) {
        perror("setup");
        return 1;
    }
    printf("d9_bench_governor%s: %d pairs of %.1f s phases per rate, costs as %% of one CPU "
           "(process CPU with recording minus without)\n",
           short_mode ? " --short" : "", pairs, secs);
    printf("%-10s %-14s %14s %12s %12s %12s  %s\n", "target/s", "mode", "switches/s", "cost median", "min", "max",
           "governor level (changes)");
    const int rates[] = {20000, 40000};
    for (size_t ri = 0; ri < sizeof rates / sizeof rates[0]; ri++) {
        atomic_store(&g_burst, rates[ri] / 2 / 1000); /* 2 switches per round trip, per ms */
        double cost[MODES][16], swr[MODES][16];
        int levels[16];
        uint64_t changes[16];
        for (int p = 0; p < pairs; p++) {
            /* off, ungoverned, off, governed: each recording phase against the off phase before it */
            for (int m = UNGOVERNED; m < MODES; m++) {
                phase_result off = run_phase(OFF, secs);
                phase_result on = run_phase((mode)m, secs);
                cost[m][p] = (on.cpu_share - off.cpu_share) * 100;
                swr[m][p] = on.switches_per_s;
                swr[OFF][p] = off.switches_per_s;
                if (m == GOVERNED) {
                    levels[p] = on.level;
                    changes[p] = on.changes;
                }
            }
        }
        for (int m = UNGOVERNED; m < MODES; m++) {
            double c[16], s[16];
            memcpy(c, cost[m], sizeof c);
            memcpy(s, swr[m], sizeof s);
            double med = median(c, pairs);
            printf("%-10d %-14s %14.0f %11.2f%% %11.2f%% %11.2f%%  ", rates[ri], mode_name[m], median(s, pairs), med,
                   c[0], c[pairs - 1]);
            if (m == GOVERNED) {
                for (int p = 0; p < pairs; p++)
                    printf("%s%s%s%u (%" PRIu64 ")", p ? ", " : "", d9_gov_mode_name(levels[p]),
                           levels[p] >= D9_GOV_LEVEL_SAMPLED_FIRST && levels[p] <= D9_GOV_LEVEL_SAMPLED_LAST ? " 1/" : "",
                           levels[p] >= D9_GOV_LEVEL_SAMPLED_FIRST && levels[p] <= D9_GOV_LEVEL_SAMPLED_LAST
                               ? d9_gov_one_in(levels[p]) : 0u, changes[p]);
                printf("; budget 1.00%%: %s\n", med <= 1.0 ? "within" : "OVER");
            } else {
                double sw = median(s, pairs);
                printf("-> %.0f ns per switch (table: %u context + %u records, + %u per stack up to 500/s)\n",
                       sw > 0 ? med / 100 * 1e9 / sw : 0, D9_GOV_NS_CONTEXT, D9_GOV_NS_RECORDS, D9_GOV_NS_STACK);
            }
        }
        double s[16];
        memcpy(s, swr[OFF], sizeof s);
        printf("%-10d %-14s %14.0f\n", rates[ri], mode_name[OFF], median(s, pairs));
    }
    rmdir(g_scratch);
    return 0;
}
