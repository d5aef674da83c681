/* d9_bench_sources: numbers for docs/kernel-sources.md.
 *
 *   1. park + unpark pair, schedstat on / off (ns)
 *   2. d9_task_suspend inside a poll: cost per call, captures and dumps
 *   3. CPU samples per second sustained: perf at 99 / 999 / 4999 Hz and the timer at
 *      99 / 250 / 1000 Hz, two spinning threads; samples written and lost
 *   4. a busy 2-worker executor-like workload (a token bounces between two workers: poll,
 *      compute, hand over, park until the token comes back: ~20 k context switches/s):
 *      throughput with each source on vs all off, phases interleaved in one process
 *   5. CPU per context switch with schedule_profile on (a byte ping-pongs on one CPU between
 *      two threads, or a thread and an unrecorded process), and the collector's part of it
 *   6. the same with raw perf events: the kernel's share, per variant of the events
 *   7. the ping-pong with work between switches, ~20 k switches/s, CPU 0 saturated: the
 *      share of the CPU schedule_profile takes, and whether the <= 3 % target is met
 *
 * Usage: d9_bench_sources [--short]   (D9_BENCH_SECTIONS=567 runs only those sections;
 *        D9_BENCH_VERBOSE=1 prints each pair of section 7) */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dial9/dial9.h"
#include "format/decoder.h"
#include "sources/perf_events.h"
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

/* ---------------------------------------------------------------- 5-7. ping-pong */

/* A byte goes back and forth between this thread and a peer over two pipes, both pinned to
 * CPU 0, so every hop is a context switch between the two. The peer is either a thread of
 * this process (two threads of one process whose perf contexts are clones: the kernel swaps
 * them at a switch instead of scheduling their events out and in, the cheap case), or a child
 * process that is not recorded (what a switch to idle or to another program costs). All CPU
 * is counted: the process's and, for a child, the child's (the kernel's work at a switch
 * lands on either side). Per switch means per switch-out + switch-in of a recorded thread:
 * two per round trip with a peer thread, one with a peer process. */
typedef enum { PEER_THREAD, PEER_PROCESS } peer_kind;

static const char *peer_name[2] = {"thread <-> thread", "thread <-> process"};

typedef struct pp_run {
    double cpu_ns;       /* all CPU used while the bytes went back and forth */
    double peers_ns;     /* of which the two ping-pong threads (or thread + child) */
    double wall_ns;      /* of the timed part */
    double run_cpu_ns;   /* all CPU used in the timed part (the peer process's too), dial9's threads too */
    uint64_t switches;   /* voluntary + involuntary switches of the ping-pong threads (not a child's) */
    uint64_t trips;
} pp_run;

static int g_ping[2], g_pong[2];
static int g_trips;                /* round trips per run, or... */
static uint64_t g_run_ns;          /* ...round trips for this long when not 0, */
static uint64_t g_warm_ns;         /* after this long of untimed ones */
static uint64_t g_hop_iters;       /* compute() iterations by each side before it answers */
static double g_peer_cpu;          /* the peer thread's CPU (ns) */
static uint64_t g_peer_switches;
static bool g_peer_records;        /* the peer thread registers with dial9 */
static void (*g_pp_tick)(void);    /* called every 256 trips (raw rings drain), may be NULL */

static double thread_cpu_ns(uint64_t *switches) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    if (switches) *switches = (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw);
    return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

/* Answers every byte until a 'q' or the end of the pipe. A peer process then reports the CPU
 * it used since the 'w' byte (the end of the warm-up), or since it started. */
static void pong_loop(bool process) {
    char c;
    double mark = (double)process_cpu_ns();
    while (read(g_ping[0], &c, 1) == 1 && c != 'q') {
        if (c == 'w') mark = (double)process_cpu_ns();
        if (g_hop_iters) compute(g_hop_iters);
        if (write(g_pong[1], &c, 1) != 1) return;
    }
    double used = (double)process_cpu_ns() - mark;
    if (process && write(g_pong[1], &used, sizeof used) != sizeof used) return;
}

static void *pong_thread(void *arg) {
    (void)arg;
    if (g_peer_records) d9_worker_begin("bench-pong", 0);
    uint64_t sw0, sw1;
    double c0 = thread_cpu_ns(&sw0);
    pong_loop(false);
    g_peer_cpu = thread_cpu_ns(&sw1) - c0;
    g_peer_switches = sw1 - sw0;
    if (g_peer_records) d9_worker_end();
    return NULL;
}

static void pin_cpu0(cpu_set_t *old) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_getaffinity_np(pthread_self(), sizeof *old, old);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

/* One ping-pong of g_trips round trips with `peer`. setup() runs before the peer thread exists
 * (so it inherits what setup opened) and after a peer process was forked (so it does not);
 * recording registers the ping-pong threads as workers. */
static pp_run ping_pong(peer_kind peer, bool (*setup)(void *), void (*teardown)(void *), void *ctx,
                        bool recording) {
    pp_run r = {0};
    cpu_set_t old;
    pin_cpu0(&old);
    if (pipe(g_ping) != 0 || pipe(g_pong) != 0) return r;
    pid_t kid = -1;
    int go[2] = {-1, -1};
    if (peer == PEER_PROCESS) {
        if (pipe(go) != 0) return r;
        kid = fork();
        if (kid == 0) {
            char c;
            if (read(go[0], &c, 1) == 1 && c == 'g') pong_loop(true);
            _exit(0);
        }
    }
    bool ok = setup(ctx);
    pthread_t th;
    g_peer_records = recording;
    if (peer == PEER_THREAD) pthread_create(&th, NULL, pong_thread, NULL); /* inherits the affinity */
    if (recording) d9_worker_begin("bench-ping", 0);
    uint64_t sw0, sw1;
    double c0 = (double)process_cpu_ns(), t0 = thread_cpu_ns(&sw0);
    uint64_t w0 = now_ns();
    double run0 = c0; /* process CPU at the start of the timed part */
    if (kid > 0 && write(go[1], ok ? "g" : "x", 1) != 1) ok = false;
    char c = 'x';
    int trips = 0;
    bool warm = g_warm_ns == 0;
    for (; ok && (g_run_ns ? (trips & 63) || now_ns() - w0 < (warm ? g_run_ns : g_warm_ns) : trips < g_trips);
         trips++) {
        if (g_hop_iters) compute(g_hop_iters);
        if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) break;
        if (g_pp_tick && (trips & 255) == 0) g_pp_tick();
        if (!warm && !((trips + 1) & 63) && now_ns() - w0 >= g_warm_ns) { /* the timed part starts */
            warm = true;
            char w = 'w';
            if (write(g_ping[1], &w, 1) != 1 || read(g_pong[0], &w, 1) != 1) break;
            trips = -1;
            w0 = now_ns();
            run0 = (double)process_cpu_ns();
        }
    }
    r.wall_ns = (double)(now_ns() - w0);
    r.run_cpu_ns = (double)process_cpu_ns() - run0;
    double peer_run = 0;
    if (write(g_ping[1], "q", 1) == 1 && kid > 0 && read(g_pong[0], &peer_run, sizeof peer_run) == sizeof peer_run)
        r.run_cpu_ns += peer_run;
    close(g_ping[1]); /* the peer ends on 'q', or on the end of the pipe */
    r.peers_ns = thread_cpu_ns(&sw1) - t0;
    r.switches = sw1 - sw0;
    if (peer == PEER_THREAD) {
        pthread_join(th, NULL);
        r.peers_ns += g_peer_cpu;
        r.switches += g_peer_switches;
    }
    if (recording) d9_worker_end();
    teardown(ctx); /* d9_stop: the collector's last drain belongs to the run */
    r.cpu_ns = (double)process_cpu_ns() - c0;
    if (kid > 0) {
        struct rusage ru;
        int st;
        wait4(kid, &st, 0, &ru);
        double kc = ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
                    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
        r.cpu_ns += kc;
        r.peers_ns += kc;
        close(go[0]);
        close(go[1]);
    }
    close(g_ping[0]);
    close(g_pong[0]);
    close(g_pong[1]);
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    r.trips = (uint64_t)trips;
    if (!ok) r.cpu_ns = -1;
    return r;
}

static double switches_per_trip(peer_kind peer) { return peer == PEER_THREAD ? 2 : 1; }

static bool setup_dial9(void *cfg) { return d9_start(cfg) == 0; }
static void teardown_dial9(void *cfg) {
    (void)cfg;
    d9_stop();
    remove_runs();
}

/* ---------------------------------------------------------------- 5. cost per switch */

typedef struct switch_cost_result {
    double per_switch[2];     /* ns of CPU per switch, schedule_profile on - off, by peer kind */
    double collector[2];      /* of which outside the ping-pong threads (the collector) */
} switch_cost_result;

static switch_cost_result g_sc;

static void switch_cost(void) {
    d9_config off, on; /* dial9 recording either way: the difference is the switch capture */
    base_config(&off);
    base_config(&on);
    on.schedule_profile = true;
    int reps = g_short ? 3 : 7;
    g_trips = g_short ? 20000 : 50000;
    for (int p = 0; p < 2; p++) {
        double d[9], rest[9], base[9];
        for (int r = 0; r < reps; r++) { /* pairs: the difference cancels the machine's drift */
            pp_run a = ping_pong((peer_kind)p, setup_dial9, teardown_dial9, &off, true);
            pp_run b = ping_pong((peer_kind)p, setup_dial9, teardown_dial9, &on, true);
            double k = switches_per_trip((peer_kind)p);
            base[r] = a.cpu_ns / (double)a.trips;
            d[r] = (b.cpu_ns / (double)b.trips - base[r]) / k;
            rest[r] = ((b.cpu_ns - b.peers_ns) / (double)b.trips - (a.cpu_ns - a.peers_ns) / (double)a.trips) / k;
        }
        g_sc.per_switch[p] = median(d, reps);
        g_sc.collector[p] = median(rest, reps);
        printf("  %-18s: %5.0f ns CPU per round trip off; schedule_profile on: %+5.0f ns per switch, of which "
               "%+4.0f ns outside the switching threads (collector)\n",
               peer_name[p], median(base, reps), g_sc.per_switch[p], g_sc.collector[p]);
    }
}

/* ---------------------------------------------------------------- 6. raw kernel cost */

typedef enum {
    RAW_NONE,
    RAW_CONTEXT,    /* a perf event on the threads that writes nothing: the perf context alone */
    RAW_SWITCH_OLD, /* switch records with the sample_id of the shared ring (before) */
    RAW_SWITCH,     /* switch records as dial9 opens them: tid + time, a ring of their own */
    RAW_STACKS,     /* + context-switch samples with call chains at every switch */
    RAW_CPU_WIDE,   /* switch records of every thread of each CPU (pid -1; privileged) */
    RAW_KINDS
} raw_kind;

static const char *raw_name[RAW_KINDS] = {
    "no events", "perf context, no records", "switch records, old sample_id",
    "switch records (dial9 now)", "+ call chain every switch", "CPU-wide switch records"};

#define OLD_SAMPLE_TYPE                                                                                      \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |        \
     PERF_SAMPLE_CALLCHAIN)

typedef struct raw_events {
    raw_kind kind;
    int fds[64];
    int nfds;
    d9_perf_ring rings[16];
    int nrings;
} raw_events;

static raw_events g_raw;

static void ignore_record(const struct perf_event_header *h, void *ctx) {
    (void)h;
    (void)ctx;
}

static void raw_drain(void) {
    for (int i = 0; i < g_raw.nrings; i++) d9_perf_ring_drain(&g_raw.rings[i], ignore_record, NULL);
}

static bool raw_open(raw_events *e, struct perf_event_attr *a, pid_t pid, int cpu, int output) {
    int fd = d9_perf_open(a, pid, cpu);
    if (fd < 0) return false;
    e->fds[e->nfds++] = fd;
    if (output >= 0) return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, output) == 0;
    return e->nrings < 16 && d9_perf_ring_map(&e->rings[e->nrings++], fd, 64) == 0;
}

/* Per CPU, on this process, inherited by the threads it creates (as dial9 opens them). */
static bool setup_raw(void *ctx) {
    raw_events *e = ctx;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu > 16) ncpu = 16;
    bool ok = true;
    for (int c = 0; c < ncpu && ok && e->kind != RAW_NONE; c++) {
        struct perf_event_attr a;
        bool cpu_wide = e->kind == RAW_CPU_WIDE;
        d9_perf_attr_init(&a, PERF_COUNT_SW_DUMMY,
                          e->kind == RAW_SWITCH_OLD ? OLD_SAMPLE_TYPE : PERF_SAMPLE_TID | PERF_SAMPLE_TIME);
        a.context_switch = e->kind != RAW_CONTEXT;
        a.exclude_kernel = !cpu_wide;
        a.exclude_hv = 1;
        a.inherit = !cpu_wide;
        a.inherit_thread = !cpu_wide;
        a.disabled = 0;
        ok = raw_open(e, &a, cpu_wide ? -1 : getpid(), c, -1);
        if (ok && e->kind == RAW_STACKS) {
            d9_perf_attr_init(&a, PERF_COUNT_SW_CONTEXT_SWITCHES, OLD_SAMPLE_TYPE);
            a.sample_period = 1;
            a.exclude_hv = 1;
            a.inherit = a.inherit_thread = 1;
            a.disabled = 0;
            ok = raw_open(e, &a, getpid(), c, -1);
        }
    }
    g_pp_tick = raw_drain;
    return ok;
}

static void teardown_raw(void *ctx) {
    raw_events *e = ctx;
    raw_drain();
    g_pp_tick = NULL;
    for (int i = 0; i < e->nrings; i++) d9_perf_ring_unmap(&e->rings[i]);
    for (int i = 0; i < e->nfds; i++) close(e->fds[i]);
    e->nrings = e->nfds = 0;
}

static double g_raw_result[2][RAW_KINDS];

static void raw_switch_cost(void) {
    int reps = g_short ? 3 : 7;
    g_trips = g_short ? 5000 : 20000;
    printf("  ns of CPU per switch (switch-out + switch-in of a traced thread) added by the events,\n"
           "  median of %d paired runs (each against a run without events just before it):\n", reps);
    for (int p = 0; p < 2; p++) {
        printf("  %s:\n", peer_name[p]);
        for (int k = RAW_CONTEXT; k < RAW_KINDS; k++) {
            if (p == PEER_PROCESS && k == RAW_STACKS) continue;
            double d[9];
            int n = 0;
            for (int r = 0; r < reps; r++) {
                g_raw.kind = RAW_NONE;
                pp_run a = ping_pong((peer_kind)p, setup_raw, teardown_raw, &g_raw, false);
                g_raw.kind = (raw_kind)k;
                pp_run b = ping_pong((peer_kind)p, setup_raw, teardown_raw, &g_raw, false);
                if (a.cpu_ns < 0 || b.cpu_ns < 0) break;
                d[n++] = (b.cpu_ns / (double)b.trips - a.cpu_ns / (double)a.trips) / switches_per_trip((peer_kind)p);
            }
            g_raw_result[p][k] = n ? median(d, n) : -1;
            if (n) printf("    %-30s %+6.0f ns\n", raw_name[k], g_raw_result[p][k]);
            else printf("    %-30s refused here\n", raw_name[k]);
        }
    }
    double stack = g_raw_result[PEER_THREAD][RAW_STACKS] - g_raw_result[PEER_THREAD][RAW_SWITCH];
    if (g_raw_result[PEER_THREAD][RAW_STACKS] > 0)
        printf("  a call chain at a switch: %.0f ns (kernel and user frames)\n", stack);
}

/* ---------------------------------------------------------------- 7. the 3 % target */

/* The ping-pong with work between switches, sized so the recorded threads switch ~20 k times
 * a second: each side computes, then hands the byte over; everything, dial9's threads too,
 * runs on CPU 0 and keeps it busy. What the capture costs (kernel records, stacks at their
 * pacing rate, collector) is the share of the CPU it takes: 1 - CPU per round trip off / on
 * (dial9 recording either way), after a warm-up that takes the stacks' initial burst, so the
 * figure is the steady state. */
static void target_check(void) {
    d9_config off, on;
    base_config(&off);
    base_config(&on);
    on.schedule_profile = true;
    int reps = g_short ? 3 : 5; /* the machine is shared: single pairs swing by several % */
    double pct[2] = {0, 0};
    for (int p = 0; p < 2; p++) {
        double k = switches_per_trip((peer_kind)p);
        g_hop_iters = 2000;
        g_warm_ns = 0;
        g_run_ns = 300 * 1000000ull;
        for (int attempt = 0; attempt < 6; attempt++) { /* size the work: ~20 k switches/s, off */
            pp_run c = ping_pong((peer_kind)p, setup_dial9, teardown_dial9, &off, true);
            double rate = (double)c.trips * k / (c.wall_ns / 1e9);
            if (rate <= 0) break;
            double scale = rate / 20000;
            if (scale > 0.97 && scale < 1.03) break;
            g_hop_iters = (uint64_t)((double)g_hop_iters * scale) + 1;
        }
        g_warm_ns = (g_short ? 300 : 800) * 1000000ull;
        g_run_ns = (g_short ? 500 : 1200) * 1000000ull;
        double d[9], rate[9];
        for (int r = 0; r < reps; r++) {
            pp_run a = ping_pong((peer_kind)p, setup_dial9, teardown_dial9, &off, true);
            pp_run b = ping_pong((peer_kind)p, setup_dial9, teardown_dial9, &on, true);
            /* CPU per round trip, not round trips per second: what other programs took from
             * CPU 0 meanwhile does not count */
            double ca = a.run_cpu_ns / (double)a.trips, cb = b.run_cpu_ns / (double)b.trips;
            d[r] = (1 - ca / cb) * 100;
            rate[r] = (double)b.trips / b.wall_ns * 1e9 * k;
            if (getenv("D9_BENCH_VERBOSE"))
                printf("    pair %d: %.0f ns CPU per round trip off, %.0f on: %.2f %%\n", r, ca, cb, d[r]);
        }
        double lo = d[0], hi = d[0];
        for (int r = 1; r < reps; r++) lo = d[r] < lo ? d[r] : lo, hi = d[r] > hi ? d[r] : hi;
        pct[p] = median(d, reps);
        printf("  %-18s: %5.1f k switches/s, %5.2f %% of one CPU taken by schedule_profile (median of %d pairs,"
               " %.1f..%.1f) -> %s\n",
               peer_name[p], median(rate, reps) / 1000, pct[p], reps, lo, hi,
               pct[p] <= 3.0 ? "<= 3 %: met" : "> 3 %: NOT met");
    }
    g_hop_iters = g_warm_ns = g_run_ns = 0;
    /* the same from the tight ping-pong: per switch x 20 k + the stacks' budget x their cost */
    double stack = g_raw_result[PEER_THREAD][RAW_STACKS] - g_raw_result[PEER_THREAD][RAW_SWITCH];
    d9_config defaults;
    d9_config_init(&defaults);
    unsigned budget = defaults.switch_stacks_per_sec; /* the stacks' pacing at its default */
    if (g_raw_result[PEER_THREAD][RAW_STACKS] > 0 && g_sc.per_switch[0] != 0) {
        for (int p = 0; p < 2; p++) {
            double est = (g_sc.per_switch[p] * 20000 + stack * budget) / 1e9 * 100;
            printf("  estimate, %-18s: %.0f ns x 20 k switches (section 5) + %u stacks/s x %.0f ns (section 6)"
                   " = %.2f %%\n",
                   peer_name[p], g_sc.per_switch[p], budget, stack, est);
        }
    }
}

/* ---------------------------------------------------------------- main */

/* D9_BENCH_SECTIONS=567 runs only those sections (all by default) */
static bool section(const char *n) {
    const char *only = getenv("D9_BENCH_SECTIONS");
    return !only || strstr(only, n);
}

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

    if (section("1")) {
        printf("1. park + unpark pair\n");
        printf("  schedstat on : %7.0f ns\n", park_pair_ns(true));
        printf("  schedstat off: %7.0f ns\n\n", park_pair_ns(false));
    }

    if (section("2")) {
        printf("2. d9_task_suspend inside a poll (poll_begin + suspend + poll_end vs without)\n");
        d9_task_dump_counters dc, dn;
        double with = suspend_ns(true, &dc), without = suspend_ns(false, &dn);
        printf("  %.1f ns per poll with a suspend, %.1f without: %.1f ns per suspend\n", with, without,
               with - without);
        printf("  %" PRIu64 " suspends: %" PRIu64 " stacks walked, %" PRIu64 " dumps written, %" PRIu64
               " dropped (task ran again), %" PRIu64 " unknown\n\n",
               dc.suspends, dc.captured, dc.emitted, dc.resumed, dc.unknown);
    }

    if (section("3")) {
        printf("3. CPU samples sustained (two spinning threads)\n");
        uint32_t perf_hz[] = {99, 999, 4999}, timer_hz[] = {99, 250, 1000};
        for (int i = 0; i < 3; i++) sustained(D9_SAMPLER_PERF, perf_hz[i]);
        for (int i = 0; i < 3; i++) sustained(D9_SAMPLER_TIMER, timer_hz[i]);
        printf("\n");
    }

    if (section("4")) {
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
    }

    if (section("5")) {
        printf("5. kernel + collector cost per context switch (a byte ping-pongs between two peers on CPU 0)\n");
        switch_cost();
        printf("\n");
    }

    if (section("6")) {
        printf("6. the kernel's part alone: raw perf events, the same ping-pong\n");
        raw_switch_cost();
        printf("\n");
    }

    if (section("7")) {
        printf("7. context-switch capture at ~20 k switches/s (#3: <= 3 %% of one CPU, off-CPU records + stacks)\n");
        target_check();
    }

    rmdir(g_scratch);
    return 0;
}
