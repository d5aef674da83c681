/* Hook cost while recording: ns per event for poll pairs, park/unpark pairs and wakes, on one
 * thread and on two threads at once, into a real trace directory.
 *
 * Each measurement is many timed batches; between batches the recorder is flushed, so every
 * batch starts with an empty ring and measures the hook itself rather than the drop path. The
 * first batches are untimed: they go twice around the ring, so every page of it has been
 * touched before timing starts (the ring is mmapped; pages are committed on first touch, and
 * a page fault per 4 KiB would add several ns per event). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

typedef enum hook_kind { HOOK_POLL, HOOK_POLL_FUSED, HOOK_PARK, HOOK_WAKE } hook_kind;

#define MIN_WARMUP_BATCHES 8

/* Untimed batches that write at least twice the default ring's size. */
static uint32_t warmup_batches(uint32_t events, uint32_t words_per_event) {
    d9_config cfg;
    d9_config_init(&cfg);
    uint64_t ring_words = (uint64_t)cfg.buffer_kb * 1024 / 8;
    uint64_t per_batch = (uint64_t)events * words_per_event;
    uint64_t n = (2 * ring_words + per_batch - 1) / per_batch;
    return n < MIN_WARMUP_BATCHES ? MIN_WARMUP_BATCHES : (uint32_t)n;
}

typedef struct hook_run {
    const bench_opts *o;
    hook_kind kind;
    uint32_t threads;
    uint32_t events;          /* per batch and thread */
    uint32_t warmup;          /* untimed batches first */
    pthread_barrier_t barrier;
    double *ns_per_event;     /* threads × batches */
} hook_run;

typedef struct hook_thread {
    hook_run *run;
    uint32_t index;
} hook_thread;

/* The loops an application would run: the public inline hooks, a new small task id each time. */
static void poll_pairs(uint32_t events, const d9_loc *where) {
    for (uint32_t i = 0; i < events / 2; i++) {
        d9_poll_begin((i & 63) + 1, where);
        d9_poll_end();
    }
}

/* The same events, each end and the next begin in one call (a nested callback's entry or
 * exit): one clock read for two events (docs/clock.md). */
static void fused_polls(uint32_t events, const d9_loc *where) {
    d9_poll_begin(1, where);
    for (uint32_t i = 1; i < events / 2; i++) d9_poll_end_begin((i & 63) + 1, where);
    d9_poll_end();
}

static void park_pairs(uint32_t events) {
    for (uint32_t i = 0; i < events / 2; i++) {
        d9_park();
        d9_unpark();
    }
}

static void wakes(uint32_t events) {
    for (uint32_t i = 0; i < events; i++) d9_wake((i & 63) + 1);
}

static void run_batch(hook_kind kind, uint32_t events, const d9_loc *where) {
    switch (kind) {
    case HOOK_POLL: poll_pairs(events, where); break;
    case HOOK_POLL_FUSED: fused_polls(events, where); break;
    case HOOK_PARK: park_pairs(events); break;
    case HOOK_WAKE: wakes(events); break;
    }
}

/* All threads run a batch together; then thread 0 drains everything before the next one. */
static void *hook_thread_main(void *arg) {
    hook_thread *ht = arg;
    hook_run *run = ht->run;
    const d9_loc *where = D9_HERE;
    d9_worker_begin("bench", ht->index);
    for (uint32_t b = 0; b < run->warmup + run->o->batches; b++) {
        pthread_barrier_wait(&run->barrier);
        uint64_t t0 = bench_now_ns();
        run_batch(run->kind, run->events, where);
        uint64_t t1 = bench_now_ns();
        if (b >= run->warmup)
            run->ns_per_event[ht->index * run->o->batches + (b - run->warmup)] =
                (double)(t1 - t0) / run->events;
        pthread_barrier_wait(&run->barrier);
        if (ht->index == 0) d9_flush();
        pthread_barrier_wait(&run->barrier);
    }
    d9_worker_end();
    return NULL;
}

static void print_row(const char *label, hook_run *run, bench_dist d, uint64_t dropped,
                      const char *target) {
    printf("  %-40s %7u %8.1f %8.1f %8.1f %9" PRIu64 "   %s\n", label, run->threads, d.median,
           d.p10, d.p90, dropped, target);
}

/* `syscalls`: NULL for a hook held to the target; else the system calls it makes by design. */
static void measure(const bench_opts *o, const char *label, hook_kind kind, uint32_t threads,
                    const char *syscalls) {
    hook_run run = {.o = o, .kind = kind, .threads = threads, .events = o->batch_events};
    if (kind == HOOK_PARK) run.events = o->batch_events / 8; /* a system call each: fewer */
    /* Words per event in the ring: a poll pair is 3 + 1, a wake 2, a park or unpark 4. */
    run.warmup = warmup_batches(run.events, kind == HOOK_PARK ? 4 : 2);
    run.ns_per_event = calloc((size_t)threads * o->batches, sizeof(double));
    hook_thread *ht = calloc(threads, sizeof *ht);
    pthread_t *tid = calloc(threads, sizeof *tid);
    if (!run.ns_per_event || !ht || !tid) {
        fprintf(stderr, "d9_bench: out of memory\n");
        exit(1);
    }
    pthread_barrier_init(&run.barrier, NULL, threads);
    d9_stats before, after;
    d9_flush();
    d9_get_stats(&before);
    for (uint32_t i = 0; i < threads; i++) {
        ht[i] = (hook_thread){&run, i};
        pthread_create(&tid[i], NULL, hook_thread_main, &ht[i]);
    }
    for (uint32_t i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    d9_flush();
    d9_get_stats(&after);
    pthread_barrier_destroy(&run.barrier);

    bench_dist d = bench_dist_of(run.ns_per_event, (size_t)threads * o->batches);
    char target[64];
    if (!syscalls)
        snprintf(target, sizeof target, "<= %.0f ns: %s", TARGET_NS_PER_EVENT,
                 bench_verdict(d.median, TARGET_NS_PER_EVENT));
    else
        snprintf(target, sizeof target, "(%s)", syscalls);
    print_row(label, &run, d, after.events_dropped - before.events_dropped, target);
    free(run.ns_per_event);
    free(ht);
    free(tid);
}

/* ---- the same hooks inside a loop that does other work: what they add there ----
 * Back-to-back hooks are the worst case: nothing hides the latency of reading the TSC. In a
 * real loop the CPU overlaps it with the surrounding work; this measures that marginal cost
 * as (time with hooks - time of the same loop without them) / events. */

#define WORK_STEPS 40 /* a dependent multiply chain: roughly 50 ns here */

static uint64_t work(uint64_t x) {
    for (int i = 0; i < WORK_STEPS; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static volatile uint64_t g_sink;

static uint64_t work_with_hooks(uint32_t pairs, const d9_loc *where) {
    uint64_t x = 1, t0 = bench_now_ns();
    for (uint32_t i = 0; i < pairs; i++) {
        d9_poll_begin((i & 63) + 1, where);
        x = work(x);
        d9_poll_end();
        x = work(x);
    }
    g_sink = x;
    return bench_now_ns() - t0;
}

static uint64_t work_alone(uint32_t pairs) {
    uint64_t x = 1, t0 = bench_now_ns();
    for (uint32_t i = 0; i < pairs; i++) {
        x = work(x);
        __asm__ volatile("" : "+r"(x)); /* keep the two halves as in the loop above */
        x = work(x);
    }
    g_sink = x;
    return bench_now_ns() - t0;
}

static void measure_in_context(const bench_opts *o) {
    uint32_t pairs = o->batch_events / 2;
    double *marginal = calloc(o->batches, sizeof(double));
    if (!marginal) exit(1);
    const d9_loc *where = D9_HERE;
    d9_worker_begin("bench", 0);
    uint64_t plain_total = 0;
    d9_stats before, after;
    d9_flush();
    d9_get_stats(&before);
    uint32_t warmup = warmup_batches(2 * pairs, 2);
    for (uint32_t b = 0; b < warmup + o->batches; b++) {
        uint64_t with = work_with_hooks(pairs, where);
        uint64_t without = work_alone(pairs);
        d9_flush();
        if (b < warmup) continue;
        marginal[b - warmup] = ((double)with - (double)without) / (2.0 * pairs);
        plain_total += without;
    }
    d9_get_stats(&after);
    d9_worker_end();
    bench_dist d = bench_dist_of(marginal, o->batches);
    char label[64], target[64];
    snprintf(label, sizeof label, "poll begin+end amid %.0f ns of work, added",
             (double)plain_total / o->batches / (2.0 * pairs));
    snprintf(target, sizeof target, "<= %.0f ns: %s (added cost)", TARGET_NS_PER_EVENT,
             bench_verdict(d.median, TARGET_NS_PER_EVENT));
    hook_run shown = {.threads = 1};
    print_row(label, &shown, d, after.events_dropped - before.events_dropped, target);
    free(marginal);
}

/* The system call each park makes for its cpu_time_ns, which its unpark carries (dial9
 * requires it on both; no user-space source where the perf page lacks cap_user_time:
 * src/core/thread_cpu_time.h), alone: what the park rows pay for it. */
static void measure_cpu_time_read(const bench_opts *o) {
    uint32_t calls = o->batch_events / 8;
    double *ns = calloc(o->batches, sizeof(double));
    if (!ns) exit(1);
    struct timespec ts;
    for (uint32_t b = 0; b < MIN_WARMUP_BATCHES + o->batches; b++) {
        uint64_t t0 = bench_now_ns();
        for (uint32_t i = 0; i < calls; i++) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        uint64_t t1 = bench_now_ns();
        if (b >= MIN_WARMUP_BATCHES) ns[b - MIN_WARMUP_BATCHES] = (double)(t1 - t0) / calls;
    }
    hook_run shown = {.threads = 1};
    print_row("clock_gettime(THREAD_CPUTIME) alone", &shown, bench_dist_of(ns, o->batches), 0,
              "(the CPU time read of each park)");
    free(ns);
}

static void header(const bench_opts *o) {
    printf("\nHook cost while recording (ns per event, per thread; %u batches of %u events,"
           " park: %u; flushed between batches)\n",
           o->batches, o->batch_events, o->batch_events / 8);
    printf("  %-40s %7s %8s %8s %8s %9s   %s\n", "hook", "threads", "median", "p10", "p90",
           "dropped", "target");
}

void bench_hook_costs(const bench_opts *o) {
    header(o);
    char *dir = bench_make_dir(o->scratch, "hooks");
    if (!dir || bench_start(dir, BENCH_SCHEDSTAT_DEFAULT) != 0) exit(1);
    measure(o, "poll begin+end", HOOK_POLL, 1, NULL);
    measure(o, "poll begin+end", HOOK_POLL, 2, NULL);
    measure(o, "poll end+begin in one call", HOOK_POLL_FUSED, 1, NULL);
    measure_in_context(o);
    measure(o, "wake", HOOK_WAKE, 1, NULL);
    measure(o, "wake", HOOK_WAKE, 2, NULL);
    /* Each park reads the thread's CPU time (1 system call; its unpark carries it) and each
     * park and unpark, when due, schedstat (1 more): back to back, the default resolution reads
     * it once per resolution */
    measure_cpu_time_read(o);
    measure(o, "park+unpark (schedstat, default)", HOOK_PARK, 1, "syscalls: 1 a pair + schedstat when due");
    measure(o, "park+unpark (schedstat, default)", HOOK_PARK, 2, "syscalls: 1 a pair + schedstat when due");
    d9_stop();

    if (bench_start(dir, 0) != 0) exit(1);
    measure(o, "park+unpark (schedstat, every)", HOOK_PARK, 1, "syscalls: 3 a pair");
    measure(o, "park+unpark (schedstat, every)", HOOK_PARK, 2, "syscalls: 3 a pair");
    d9_stop();

    if (bench_start(dir, BENCH_SCHEDSTAT_OFF) != 0) exit(1);
    measure(o, "park+unpark (schedstat off)", HOOK_PARK, 1, "syscalls: 1 a pair (CPU time)");
    measure(o, "park+unpark (schedstat off)", HOOK_PARK, 2, "syscalls: 1 a pair (CPU time)");
    d9_stop();
    bench_remove_tree(dir);
    free(dir);
}
