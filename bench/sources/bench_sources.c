/* d9_bench_sources: numbers for docs/kernel-sources.md.
 *
 *   1. park + unpark pair, schedstat on / off (ns)
 *   2. d9_task_suspend inside a poll: cost per call, captures and dumps
 *   3. CPU samples per second sustained: perf at 99 / 999 / 4999 Hz and the timer at
 *      99 / 250 / 1000 Hz, two spinning threads; samples written and lost
 *   4. a busy 2-worker executor-like workload (a token bounces between two workers: poll,
 *      compute, hand over, park until the token comes back: ~20 k context switches/s):
 *      throughput with each source on vs all off, phases interleaved in one process
 *   5. CPU per context switch with schedule_profile on (two threads ping-pong on one CPU)
 *   6. the same with raw perf events: the kernel's share
 *
 * Usage: d9_bench_sources [--short] */
#include <dirent.h>
#include <sched.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dial9/dial9.h"
#include "format/decoder.h"
#include "sources/perf_ring.h"
#include "sources/task_dump.h"

static bool g_short;
static char g_scratch[256];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void base_config(d9_config *cfg) {
    d9_config_init(cfg);
    cfg->trace_dir = g_scratch;
    cfg->cpu_profile = false;
    cfg->schedule_profile = false;
    cfg->task_dumps = false;
    cfg->symbolize = false;
    cfg->max_total_size = 256ull * 1024 * 1024;
}

static void remove_runs(void) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/*", g_scratch);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not clean %s\n", g_scratch);
}

/* ---------------------------------------------------------------- trace counting */

typedef struct counts {
    uint64_t cpu_samples, switch_stacks, switches, dumps, dropped;
    const char *want_meta;
    char meta[256];
} counts;

static void count_event(const d9_event *ev, counts *c) {
    const char *n = ev->schema->name;
    if (strcmp(n, "CpuSampleEvent") == 0) {
        uint64_t src = 0;
        d9_value_uint(d9_event_field(ev, "source"), &src);
        if (src == 0) c->cpu_samples++;
        else c->switch_stacks++;
    } else if (strcmp(n, "SchedSwitchEvent") == 0) {
        c->switches++;
    } else if (strcmp(n, "TaskDumpEvent") == 0) {
        c->dumps++;
    } else if (strcmp(n, "DroppedEventsEvent") == 0) {
        uint64_t k = 0;
        d9_value_uint(d9_event_field(ev, "count"), &k);
        c->dropped += k;
    } else if (strcmp(n, "SegmentMetadataEvent") == 0 && c->want_meta && !c->meta[0]) {
        const d9_value *m = d9_event_field(ev, "entries");
        for (uint32_t i = 0; m && i < m->map.count; i++) {
            const d9_dec_kv *kv = &m->map.items[i];
            if (kv->key.len == strlen(c->want_meta) && memcmp(kv->key.ptr, c->want_meta, kv->key.len) == 0)
                snprintf(c->meta, sizeof c->meta, "%.*s", (int)kv->value.len, kv->value.ptr);
        }
    }
}

static void count_run(const char *run_dir, counts *c) {
    DIR *d = opendir(run_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "trace.", 6) != 0) continue;
        char path[768];
        snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
        d9_decoder *dec = d9_dec_open_path(path, NULL, NULL, 0);
        if (!dec) continue;
        d9_event ev;
        while (d9_dec_next(dec, &ev) > 0) count_event(&ev, c);
        d9_dec_close(dec);
    }
    if (d) closedir(d);
}

/* ---------------------------------------------------------------- 1. park / unpark */

static double park_pair_ns(bool schedstat) {
    d9_config cfg;
    base_config(&cfg);
    cfg.schedstat = schedstat;
    cfg.schedstat_resolution_us = 0; /* every park and unpark: the cost of one read pair */
    if (d9_start(&cfg) != 0) return -1;
    d9_worker_begin("bench-park", 0);
    const int batches = g_short ? 20 : 200, per_batch = 1000;
    double best = 1e30;
    for (int b = 0; b < batches; b++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < per_batch; i++) {
            d9_park();
            d9_unpark();
        }
        double ns = (double)(now_ns() - t0) / per_batch;
        if (ns < best) best = ns; /* the least disturbed batch: this machine is shared */
        d9_flush();               /* untimed: keeps the ring from filling */
    }
    d9_worker_end();
    d9_stop();
    remove_runs();
    return best;
}

/* ---------------------------------------------------------------- 2. task suspend */

static double suspend_ns(bool suspend, d9_task_dump_counters *delta) {
    d9_config cfg;
    base_config(&cfg);
    cfg.task_dumps = true;
    if (d9_start(&cfg) != 0) return -1;
    d9_task_dump_counters before, after;
    d9_task_dump_counters_get(&before);
    const int batches = g_short ? 50 : 500, per_batch = 4000;
    double best = 1e30;
    uint64_t task = 0;
    for (int b = 0; b < batches; b++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < per_batch; i++, task++) {
            d9_poll_begin(task, NULL);
            if (suspend) d9_task_suspend(task);
            d9_poll_end();
        }
        double ns = (double)(now_ns() - t0) / per_batch;
        if (ns < best) best = ns;
        d9_flush();
    }
    d9_task_dump_counters_get(&after);
    d9_stop();
    remove_runs();
    delta->suspends = after.suspends - before.suspends;
    delta->captured = after.captured - before.captured;
    delta->emitted = after.emitted - before.emitted;
    delta->resumed = after.resumed - before.resumed;
    delta->unknown = after.unknown - before.unknown;
    return best;
}

/* ---------------------------------------------------------------- 3. samples sustained */

static _Atomic int g_stop_spin;
static _Atomic uint64_t g_spin_cpu_ns;

static void *spinner(void *arg) {
    (void)arg;
    d9_poll_begin(1, NULL); /* registers: the timer sampler arms recording threads */
    uint64_t x = 1;
    while (!atomic_load_explicit(&g_stop_spin, memory_order_relaxed))
        for (int i = 0; i < 10000; i++) {
            x = x * 6364136223846793005ull + (uint64_t)i;
            __asm__ volatile("" : "+r"(x));
        }
    d9_poll_end();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    atomic_fetch_add(&g_spin_cpu_ns, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    return NULL;
}

static void sustained(d9_sampler_mode mode, uint32_t hz) {
    d9_config cfg;
    base_config(&cfg);
    cfg.cpu_profile = true;
    cfg.sampler = mode;
    cfg.cpu_sample_hz = hz;
    if (d9_start(&cfg) != 0) return;
    double secs = g_short ? 1.0 : 3.0;
    atomic_store(&g_stop_spin, 0);
    atomic_store(&g_spin_cpu_ns, 0);
    pthread_t th[2];
    uint64_t t0 = now_ns();
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, spinner, NULL);
    struct timespec nap = {(time_t)secs, (long)((secs - (int)secs) * 1e9)};
    nanosleep(&nap, NULL);
    atomic_store(&g_stop_spin, 1);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    double elapsed = (double)(now_ns() - t0) / 1e9;
    d9_stop();
    counts c = {.want_meta = "source.cpu_profile"};
    count_run(d9_run_dir(), &c);
    double cpu_s = (double)atomic_load(&g_spin_cpu_ns) / 1e9;
    printf("  %-5s %5u Hz x 2 threads: %7.0f samples/s written, %6.1f per CPU-second of a thread "
           "(threads got %.2f CPU-s in %.2f s), %" PRIu64 " lost\n",
           mode == D9_SAMPLER_PERF ? "perf" : "timer", hz, (double)c.cpu_samples / elapsed,
           cpu_s > 0 ? (double)c.cpu_samples / cpu_s : 0, cpu_s, elapsed, c.dropped);
    if (!strncmp(c.meta, "inactive", 8)) printf("        (%s)\n", c.meta);
    remove_runs();
}

/* ---------------------------------------------------------------- 4. executor workload */

typedef struct queue {
    pthread_mutex_t m;
    pthread_cond_t c;
    uint64_t items[16];
    unsigned head, tail;
} queue;

static queue g_q[2];
static _Atomic int g_stop_exec;
static _Atomic uint64_t g_hops, g_switches;
static uint64_t g_compute_iters = 20000;

static void compute(uint64_t iters) {
    uint64_t x = 1;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ull + i;
        __asm__ volatile("" : "+r"(x));
    }
}

static void push(queue *q, uint64_t v) {
    pthread_mutex_lock(&q->m);
    q->items[q->tail++ % 16] = v;
    pthread_cond_signal(&q->c);
    pthread_mutex_unlock(&q->m);
}

static void *exec_worker(void *arg) {
    unsigned me = (unsigned)(uintptr_t)arg;
    d9_worker_begin("bench-exec", me);
    queue *q = &g_q[me], *other = &g_q[1 - me];
    uint64_t hops = 0;
    for (;;) {
        pthread_mutex_lock(&q->m);
        while (q->head == q->tail && !atomic_load(&g_stop_exec)) {
            d9_park();
            pthread_cond_wait(&q->c, &q->m);
            d9_unpark();
        }
        if (atomic_load(&g_stop_exec)) {
            pthread_mutex_unlock(&q->m);
            break;
        }
        uint64_t task = q->items[q->head++ % 16];
        pthread_mutex_unlock(&q->m);
        d9_poll_begin(task, NULL);
        compute(g_compute_iters);
        d9_wake(task);
        push(other, task);
        d9_poll_end();
        hops++;
    }
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    atomic_fetch_add(&g_switches, (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw));
    atomic_fetch_add(&g_hops, hops);
    d9_worker_end();
    return NULL;
}

typedef struct exec_result {
    double hops_per_s, switches_per_s;
    double cpu_ns_per_hop; /* the whole process: workers, kernel work on their behalf, collector */
    counts c;
} exec_result;

static uint64_t process_cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static exec_result exec_phase(const d9_config *cfg, double secs) {
    exec_result r = {0};
    bool recording = cfg != NULL;
    if (recording && d9_start(cfg) != 0) {
        fprintf(stderr, "d9_start: %s\n", d9_last_error());
        return r;
    }
    atomic_store(&g_stop_exec, 0);
    atomic_store(&g_hops, 0);
    atomic_store(&g_switches, 0);
    for (int i = 0; i < 2; i++) g_q[i].head = g_q[i].tail = 0;
    pthread_t th[2];
    for (uintptr_t i = 0; i < 2; i++) pthread_create(&th[i], NULL, exec_worker, (void *)i);
    push(&g_q[0], 1); /* one token in flight: every hop parks the worker it leaves */
    uint64_t t0 = now_ns(), cpu0 = process_cpu_ns();
    struct timespec nap = {(time_t)secs, (long)((secs - (int)secs) * 1e9)};
    nanosleep(&nap, NULL);
    atomic_store(&g_stop_exec, 1);
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&g_q[i].m);
        pthread_cond_broadcast(&g_q[i].c);
        pthread_mutex_unlock(&g_q[i].m);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    double elapsed = (double)(now_ns() - t0) / 1e9;
    if (recording) d9_stop(); /* the collector's last drain belongs to the phase */
    uint64_t cpu = process_cpu_ns() - cpu0;
    r.hops_per_s = (double)atomic_load(&g_hops) / elapsed;
    r.cpu_ns_per_hop = atomic_load(&g_hops) ? (double)cpu / (double)atomic_load(&g_hops) : 0;
    r.switches_per_s = (double)atomic_load(&g_switches) / elapsed;
    if (recording) {
        count_run(d9_run_dir(), &r.c);
        remove_runs();
    }
    return r;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MODES 5
#define MAX_REPS 9

static void executor_overhead(void) {
    for (int i = 0; i < 2; i++) {
        pthread_mutex_init(&g_q[i].m, NULL);
        pthread_cond_init(&g_q[i].c, NULL);
    }
    const char *names[MODES] = {"sources off (baseline)", "cpu profile perf 99 Hz", "cpu profile timer 99 Hz",
                                "off-CPU records + switch stacks", "task dumps (no suspends)"};
    d9_config cfgs[MODES];
    for (int m = 0; m < MODES; m++) base_config(&cfgs[m]);
    cfgs[1].cpu_profile = true;
    cfgs[2].cpu_profile = true;
    cfgs[2].sampler = D9_SAMPLER_TIMER;
    cfgs[3].schedule_profile = true;
    cfgs[4].task_dumps = true;
    int reps = g_short ? 3 : MAX_REPS;
    double spread[MODES][2];
    double secs = g_short ? 0.5 : 1.0;
    double hops[MODES][MAX_REPS], sw[MODES][MAX_REPS], cpu[MODES][MAX_REPS];
    counts last[MODES];
    memset(last, 0, sizeof last);
    exec_phase(&cfgs[0], 0.3); /* warm up */
    const char *only = getenv("D9_BENCH_ONLY_MODE"); /* investigate one mode alone */
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < MODES; k++) {
            int m = (k + r) % MODES; /* rotate the order: drift hits every mode alike */
            if (only && m != atoi(only)) {
                hops[m][r] = sw[m][r] = cpu[m][r] = 1;
                continue;
            }
            exec_result res = exec_phase(&cfgs[m], secs);
            hops[m][r] = res.hops_per_s;
            sw[m][r] = res.switches_per_s;
            cpu[m][r] = res.cpu_ns_per_hop;
            if (only) printf("    %s: %.0f polls/s, %.0f switches/s, %.0f ns CPU/poll, %" PRIu64 " samples\n", names[m],
                             res.hops_per_s, res.switches_per_s, res.cpu_ns_per_hop, res.c.cpu_samples);
            last[m] = res.c;
        }
    for (int m = 0; m < MODES; m++) {
        double sorted[MAX_REPS];
        memcpy(sorted, hops[m], sizeof(double) * (size_t)reps);
        qsort(sorted, (size_t)reps, sizeof *sorted, cmp_double);
        spread[m][0] = sorted[0];
        spread[m][1] = sorted[reps - 1];
    }
    double base = median(hops[0], reps), base_cpu = median(cpu[0], reps);
    printf("  %d phases of %.1f s per mode, interleaved; medians (throughput [min..max]: noisy on a\n"
           "  shared machine; CPU per poll: process CPU time / polls, the robust measure):\n", reps, secs);
    for (int m = 0; m < MODES; m++) {
        double h = median(hops[m], reps), s = median(sw[m], reps), c = median(cpu[m], reps);
        printf("  %-32s %6.0f polls/s [%.0f..%.0f] %+6.1f %%, %6.0f switches/s, CPU/poll %6.0f ns %+6.1f %%",
               names[m], h, spread[m][0], spread[m][1], (h - base) / base * 100, s, c,
               (c - base_cpu) / base_cpu * 100);
        if (m == 1 || m == 2) printf("  (%" PRIu64 " CPU samples in the last phase)", last[m].cpu_samples);
        if (m == 3)
            printf("  (%" PRIu64 " switch records, %" PRIu64 " switch stacks, %" PRIu64 " lost)", last[m].switches,
                   last[m].switch_stacks, last[m].dropped);
        printf("\n");
    }
}

/* ---------------------------------------------------------------- 5. cost per switch */

static int g_ping[2], g_pong[2];
static int g_trips;

static void *ponger(void *arg) {
    (void)arg;
    d9_worker_begin("bench-pong", 0);
    char c;
    for (int i = 0; i < g_trips; i++) {
        if (read(g_ping[0], &c, 1) != 1 || write(g_pong[1], &c, 1) != 1) break;
    }
    d9_worker_end();
    return NULL;
}

/* Process CPU time per round trip of a byte between two threads pinned to one CPU (two
 * context switches per trip), recording with `cfg`. */
static double cpu_per_trip(const d9_config *cfg) {
    if (d9_start(cfg) != 0) return -1;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    cpu_set_t old;
    pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    if (pipe(g_ping) != 0 || pipe(g_pong) != 0) return -1;
    g_trips = g_short ? 20000 : 100000;
    pthread_t th;
    pthread_create(&th, NULL, ponger, NULL); /* inherits the affinity */
    d9_worker_begin("bench-ping", 0);
    uint64_t c0 = process_cpu_ns();
    char c = 'x';
    for (int i = 0; i < g_trips; i++) {
        if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) break;
    }
    pthread_join(th, NULL);
    d9_worker_end();
    d9_stop();
    uint64_t cpu = process_cpu_ns() - c0;
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    for (int i = 0; i < 2; i++) {
        close(g_ping[i]);
        close(g_pong[i]);
    }
    remove_runs();
    return (double)cpu / g_trips;
}

static void switch_cost(void) {
    d9_config off, on;
    base_config(&off);
    base_config(&on);
    on.schedule_profile = true;
    int reps = g_short ? 3 : 7;
    double a[9], b[9];
    for (int r = 0; r < reps; r++) {
        a[r] = cpu_per_trip(&off);
        b[r] = cpu_per_trip(&on);
    }
    double ma = median(a, reps), mb = median(b, reps);
    printf("  sources off: %6.0f ns CPU per round trip; schedule_profile on: %6.0f ns: %+.0f ns per context switch\n",
           ma, mb, (mb - ma) / 2);
    printf("  (at 20 k switches/s that is %.1f %% of one CPU; stacks are paced to %u/s at such rates)\n",
           (mb - ma) / 2 * 20000 / 1e9 * 100, 2000u);
}

/* ---------------------------------------------------------------- 6. raw kernel cost */

static void *raw_ponger(void *arg) {
    (void)arg;
    char c;
    for (int i = 0; i < g_trips; i++)
        if (read(g_ping[0], &c, 1) != 1 || write(g_pong[1], &c, 1) != 1) break;
    return NULL;
}

static void ignore_record(const struct perf_event_header *h, void *ctx) {
    (void)h;
    (void)ctx;
}

/* CPU per round trip with raw perf events on CPU 0, inherited by the ponger: none, switch
 * records (dummy + context_switch), or context-switch samples with call chains too. */
static double raw_trip(int what) {
    cpu_set_t one, old;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    int fds[2] = {-1, -1};
    d9_perf_ring ring;
    memset(&ring, 0, sizeof ring);
    for (int k = 0; k < what; k++) {
        struct perf_event_attr a;
        d9_perf_attr_init(&a, k == 0 ? PERF_COUNT_SW_DUMMY : PERF_COUNT_SW_CONTEXT_SWITCHES,
                          PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                              PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN);
        a.inherit = 1;
        a.exclude_hv = 1;
        if (k == 0) {
            a.context_switch = 1;
            a.exclude_kernel = 1;
        } else {
            a.sample_period = 1;
        }
        fds[k] = d9_perf_open(&a, getpid(), 0);
        if (fds[k] < 0) return -1;
        if (k == 0) d9_perf_ring_map(&ring, fds[0], 128);
        else ioctl(fds[k], PERF_EVENT_IOC_SET_OUTPUT, fds[0]);
        ioctl(fds[k], PERF_EVENT_IOC_ENABLE, 0);
    }
    if (pipe(g_ping) != 0 || pipe(g_pong) != 0) return -1;
    g_trips = g_short ? 20000 : 100000;
    pthread_t th;
    pthread_create(&th, NULL, raw_ponger, NULL);
    uint64_t c0 = process_cpu_ns();
    char c = 'x';
    for (int i = 0; i < g_trips; i++) {
        if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) break;
        if ((i & 255) == 0) d9_perf_ring_drain(&ring, ignore_record, NULL);
    }
    pthread_join(th, NULL);
    uint64_t cpu = process_cpu_ns() - c0;
    d9_perf_ring_unmap(&ring);
    for (int k = 0; k < what; k++) close(fds[k]);
    for (int i = 0; i < 2; i++) {
        close(g_ping[i]);
        close(g_pong[i]);
    }
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    return (double)cpu / g_trips;
}

static void raw_switch_cost(void) {
    int reps = g_short ? 3 : 7;
    double v[3][9];
    for (int r = 0; r < reps; r++)
        for (int w = 0; w < 3; w++) v[w][r] = raw_trip(w);
    double none = median(v[0], reps), rec = median(v[1], reps), stk = median(v[2], reps);
    if (none < 0 || rec < 0) {
        printf("  perf refused here\n");
        return;
    }
    printf("  no events %.0f ns, switch records %.0f ns, + call chains %.0f ns CPU per round trip:\n"
           "  %.0f ns per switch for its two records, %.0f ns more for a call chain\n",
           none, rec, stk, (rec - none) / 2, stk > 0 ? (stk - rec) / 2 : 0);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--short") == 0) g_short = true;
        else {
            fprintf(stderr, "usage: %s [--short]\n", argv[0]);
            return 2;
        }
    }
    snprintf(g_scratch, sizeof g_scratch, "/tmp/d9-bench-sources-XXXXXX");
    if (!mkdtemp(g_scratch)) {
        perror("mkdtemp");
        return 1;
    }
    printf("dial9 kernel sources benchmark%s (%ld CPUs)\n\n", g_short ? " (short)" : "", sysconf(_SC_NPROCESSORS_ONLN));

    printf("1. park + unpark pair\n");
    printf("  schedstat on : %7.0f ns\n", park_pair_ns(true));
    printf("  schedstat off: %7.0f ns\n\n", park_pair_ns(false));

    printf("2. d9_task_suspend inside a poll (poll_begin + suspend + poll_end vs without)\n");
    d9_task_dump_counters dc, dn;
    double with = suspend_ns(true, &dc), without = suspend_ns(false, &dn);
    printf("  %.1f ns per poll with a suspend, %.1f without: %.1f ns per suspend\n", with, without, with - without);
    printf("  %" PRIu64 " suspends: %" PRIu64 " stacks walked, %" PRIu64 " dumps written, %" PRIu64
           " dropped (task ran again), %" PRIu64 " unknown\n\n",
           dc.suspends, dc.captured, dc.emitted, dc.resumed, dc.unknown);

    printf("3. CPU samples sustained (two spinning threads)\n");
    uint32_t perf_hz[] = {99, 999, 4999}, timer_hz[] = {99, 250, 1000};
    for (int i = 0; i < 3; i++) sustained(D9_SAMPLER_PERF, perf_hz[i]);
    for (int i = 0; i < 3; i++) sustained(D9_SAMPLER_TIMER, timer_hz[i]);
    printf("\n");

    printf("4. busy 2-worker executor (one token bouncing, compute per poll)\n");
    /* size the compute so the workers switch ~20 k times a second with the sources off */
    d9_config base;
    base_config(&base);
    for (int attempt = 0; attempt < 8; attempt++) {
        exec_result r = exec_phase(&base, 0.4);
        if (r.switches_per_s <= 0) break;
        double scale = r.switches_per_s / 20000.0;
        if (scale > 0.9 && scale < 1.1) break;
        g_compute_iters = (uint64_t)((double)g_compute_iters * scale);
        if (g_compute_iters < 100) g_compute_iters = 100;
    }
    printf("  compute per poll: %" PRIu64 " iterations\n", g_compute_iters);
    executor_overhead();
    printf("\n");

    printf("5. kernel + collector cost per context switch (two threads ping-pong a byte on CPU 0)\n");
    switch_cost();
    printf("\n");

    printf("6. the kernel's part alone: raw perf events, the same ping-pong\n");
    raw_switch_cost();

    rmdir(g_scratch);
    return 0;
}
