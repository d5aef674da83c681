/* Memory bounded whatever the thread count: 1 000 threads, all alive at once, each record a few
 * events under a 2 MiB budget for all rings (first rings are 4 KiB: at most 512 fit). The
 * recorder's accounting and the process's RSS stay within the budget, and every thread's
 * events are in the trace or counted in its DroppedEventsEvent; some threads recorded, some
 * dropped (the budget shows as drops, never as a failure). Then one thread records far more
 * than a first ring holds: its ring grows and nothing of it is lost. */
#include <pthread.h>
#include <stdio.h>

#include "check.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

#define THREADS 1000
#define POLLS 5 /* poll begin + end each: 10 events per thread */
#define EVENTS (2 * POLLS)
#define BUDGET_MB 2
#define BIG_POLLS 3000  /* 6 000 events, 12 000 words: grows a 4 KiB ring to 128 KiB */
#define BIG_TASKS 1000000 /* the big thread's task ids start here */

typedef struct per_thread {
    pid_t tid;
    uint64_t decoded, dropped;
} per_thread;

static per_thread g_threads[THREADS + 1];
static pthread_barrier_t g_recorded, g_measured;

static per_thread *by_tid(uint64_t tid) {
    for (int i = 0; i <= THREADS; i++)
        if ((uint64_t)g_threads[i].tid == tid) return &g_threads[i];
    return NULL;
}

static void *recorder_thread(void *arg) {
    uintptr_t idx = (uintptr_t)arg;
    g_threads[idx].tid = gettid();
    for (int i = 0; i < POLLS; i++) {
        d9_poll_begin(idx * 100 + (uint64_t)i + 1, D9_HERE);
        d9_poll_end();
    }
    pthread_barrier_wait(&g_recorded); /* every ring exists now */
    pthread_barrier_wait(&g_measured);
    return NULL;
}

static void *big_thread(void *arg) {
    (void)arg;
    g_threads[THREADS].tid = gettid();
    for (int i = 0; i < BIG_POLLS; i++) {
        d9_poll_begin(BIG_TASKS + (uint64_t)i, D9_HERE);
        d9_poll_end();
    }
    return NULL;
}

static void on_event(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (d9t_is(ev, "DroppedEventsEvent")) {
        per_thread *p = by_tid(d9t_field_u(ev, "tid"));
        if (p) p->dropped += d9t_field_u(ev, "count");
    }
}

/* Poll events carry no tid: tasks are numbered per thread (idx * 100 + i + 1), so a poll start
 * names its thread, and a thread's poll end is never kept without its start (one thread's
 * records stay in order): each start counts for its pair, and the totals are checked apart. */
static void on_poll(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (!d9t_is(ev, "PollStartEvent")) return;
    uint64_t task = d9t_field_u(ev, "task_id");
    if (task == UINT64_MAX || task == 0) return;
    uint64_t idx = task >= BIG_TASKS ? THREADS : (task - 1) / 100;
    if (idx > THREADS) return;
    g_threads[idx].decoded += 2;
}

static uint64_t g_starts, g_ends;
static void count_polls(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (d9t_is(ev, "PollStartEvent")) g_starts++;
    else if (d9t_is(ev, "PollEndEvent")) g_ends++;
}

static uint64_t rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %" SCNu64, &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

/* RSS while THREADS threads wait at the barrier after recording (or not). */
static uint64_t run_threads(uint64_t *ring_bytes_then) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&g_recorded, NULL, THREADS + 1);
    pthread_barrier_init(&g_measured, NULL, THREADS + 1);
    pthread_t th[THREADS];
    uint64_t before = rss_kb();
    for (uintptr_t i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], &attr, recorder_thread, (void *)i) != 0) {
            fprintf(stderr, "cannot create thread %zu\n", (size_t)i);
            exit(2);
        }
    pthread_barrier_wait(&g_recorded);
    uint64_t during = rss_kb();
    d9_stats st;
    d9_get_stats(&st);
    if (ring_bytes_then) *ring_bytes_then = st.buffer_bytes;
    pthread_barrier_wait(&g_measured);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_recorded);
    pthread_barrier_destroy(&g_measured);
    pthread_attr_destroy(&attr);
    return during > before ? during - before : 0;
}

int main(void) {
    /* The same threads without recording: their stacks and the allocator's share of the RSS. */
    uint64_t base_kb = run_threads(NULL);

    char *dir = d9t_mkdtemp("memory-budget");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.memory_budget_mb = BUDGET_MB;
    cfg.schedule_profile = false; /* only the rings' memory is measured */
    cfg.task_dumps = false;
    CHECK(d9_start(&cfg) == 0);

    uint64_t ring_bytes = 0;
    uint64_t rec_kb = run_threads(&ring_bytes);
    d9_stats st;
    d9_get_stats(&st);
    uint64_t budget = (uint64_t)BUDGET_MB << 20;
    printf("%d threads alive: rings %" PRIu64 " KiB (peak %" PRIu64 " KiB) of a %d MiB budget; "
           "RSS +%" PRIu64 " KiB recording vs +%" PRIu64 " KiB not\n",
           THREADS, ring_bytes / 1024, st.buffer_bytes_peak / 1024, BUDGET_MB, rec_kb, base_kb);
    CHECK(ring_bytes <= budget);
    CHECK(st.buffer_bytes_peak <= budget);
    CHECK(ring_bytes >= budget / 2); /* the budget was used, not avoided */
    /* The rings' pages are populated when taken: RSS grows by about what they hold (plus the
     * per-thread bookkeeping, ~0.3 KiB each, and allocator noise), never by the 1 GiB that
     * 1 000 rings of the full DIAL9_BUFFER_KB would be. */
    CHECK(rec_kb <= base_kb + budget / 1024 + 4096);

    /* The exited threads' rings are freed once read: all of the budget is free again ... */
    d9_flush();
    d9_get_stats(&st);
    CHECK_EQ_U64(st.buffer_bytes, 0);
    /* ... and one thread that records far more than a first ring holds gets a larger one. */
    pthread_t big;
    CHECK(pthread_create(&big, NULL, big_thread, NULL) == 0);
    pthread_join(big, NULL);
    d9_stop();
    d9_get_stats(&st);

    CHECK(d9t_decode_run(d9_run_dir(), on_event, NULL) == 0);
    CHECK(d9t_decode_run(d9_run_dir(), on_poll, NULL) == 0);
    CHECK(d9t_decode_run(d9_run_dir(), count_polls, NULL) == 0);
    CHECK_EQ_U64(g_starts, g_ends);
    int complete = 0, recorded = 0, dropped_all = 0;
    uint64_t total_dropped = 0;
    for (int i = 0; i < THREADS; i++) {
        per_thread *p = &g_threads[i];
        if (p->decoded + p->dropped == EVENTS) complete++;
        else fprintf(stderr, "thread %d (tid %d): %" PRIu64 " decoded + %" PRIu64 " dropped != %d\n", i,
                     (int)p->tid, p->decoded, p->dropped, EVENTS);
        if (p->decoded == EVENTS) recorded++;
        if (p->dropped == EVENTS) dropped_all++;
        total_dropped += p->dropped;
    }
    printf("threads: %d fully recorded, %d dropped entirely (%" PRIu64 " events dropped, stats say %" PRIu64 ")\n",
           recorded, dropped_all, total_dropped, st.events_dropped);
    CHECK_EQ_U64(complete, THREADS);
    CHECK(recorded > 0);
    CHECK(dropped_all > 0);
    CHECK(recorded <= (int)(budget / (D9_RING_FIRST_WORDS * 8)));
    CHECK_EQ_U64(st.events_dropped, total_dropped);
    printf("big thread: %" PRIu64 " of %d events decoded, %" PRIu64 " dropped; peak rings %" PRIu64 " KiB\n",
           g_threads[THREADS].decoded, 2 * BIG_POLLS, g_threads[THREADS].dropped, st.buffer_bytes_peak / 1024);
    CHECK_EQ_U64(g_threads[THREADS].decoded, 2 * BIG_POLLS);
    CHECK_EQ_U64(g_threads[THREADS].dropped, 0);
    CHECK(st.buffer_bytes_peak <= budget);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_memory_budget");
}
