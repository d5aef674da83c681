/* No silent loss: N threads record M events each, then the trace must account for every one of
 * them, per thread: decoded events + events reported in DroppedEventsEvent = events emitted.
 * Run with a tiny buffer (many drops) and the default one, across several rotated segments.
 * Every drop is reported as its thread's. Timestamps never go backwards within a thread. */
#include <pthread.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

#define THREADS 4
#define ITERATIONS 100000
#define PARK_EVERY 1000

typedef struct per_worker {
    uint64_t emitted;
    uint64_t decoded;
    uint64_t dropped;
    uint64_t last_ts;
    uint64_t backwards;
} per_worker;

/* Keyed by tid: worker ids map to tids through WorkerRegisteredEvent, drops carry the tid. */
static per_worker g_threads[THREADS];
static pid_t g_tids[THREADS];
static uint64_t g_worker_tid[256];
static uint64_t g_unattributed_drops; /* DroppedEventsEvent naming none of our threads */
static uint64_t g_poll_cpu; /* PollCpuEvent: none, with the long polls' CPU time off */

static per_worker *by_tid(uint64_t tid) {
    for (int i = 0; i < THREADS; i++)
        if ((uint64_t)g_tids[i] == tid) return &g_threads[i];
    return NULL;
}

static void *producer(void *arg) {
    uint32_t idx = (uint32_t)(uintptr_t)arg;
    g_tids[idx] = gettid();
    d9_worker_begin("stress", idx);
    uint64_t n = 0;
    for (uint64_t i = 0; i < ITERATIONS; i++) {
        d9_poll_begin((uint64_t)idx << 32 | i, D9_HERE);
        d9_wake(i + 1);
        d9_poll_end();
        n += 3;
        if (i % PARK_EVERY == 0) {
            d9_park();
            d9_unpark();
            n += 2;
        }
    }
    g_threads[idx].emitted = n;
    d9_worker_end();
    return NULL;
}

static void on_event(const d9_event *ev, void *ctx) {
    (void)ctx;
    uint64_t w;
    if (d9t_is(ev, "WorkerRegisteredEvent")) {
        w = d9t_field_u(ev, "worker_id");
        if (w < 256) g_worker_tid[w] = d9t_field_u(ev, "tid");
        return;
    }
    if (d9t_is(ev, "DroppedEventsEvent")) {
        per_worker *p = by_tid(d9t_field_u(ev, "tid"));
        if (p) p->dropped += d9t_field_u(ev, "count");
        else g_unattributed_drops += d9t_field_u(ev, "count");
        return;
    }
    if (d9t_is(ev, "PollCpuEvent")) g_poll_cpu++;
    if (d9t_is(ev, "WakeEventEvent")) w = d9t_field_u(ev, "target_worker");
    else if (d9t_is(ev, "PollStartEvent") || d9t_is(ev, "PollEndEvent") ||
             d9t_is(ev, "WorkerParkEvent") || d9t_is(ev, "WorkerUnparkEvent"))
        w = d9t_field_u(ev, "worker_id");
    else return;
    if (w >= 256) return;
    per_worker *p = by_tid(g_worker_tid[w]);
    if (!p) return;
    p->decoded++;
    if (ev->ts_ns < p->last_ts) p->backwards++;
    p->last_ts = ev->ts_ns;
}

static void run(uint32_t buffer_kb) {
    memset(g_threads, 0, sizeof g_threads);
    memset(g_worker_tid, 0, sizeof g_worker_tid);
    g_unattributed_drops = 0;
    g_poll_cpu = 0;
    char *dir = d9t_mkdtemp("accounting");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.buffer_kb = buffer_kb;
    cfg.max_file_size = 512 * 1024; /* several segments */
    cfg.max_total_size = 1024ull * 1024 * 1024;
    CHECK(d9_start(&cfg) == 0);

    pthread_t th[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, producer, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);

    char **files;
    int nfiles = d9t_list_segments(d9_run_dir(), &files);
    d9t_free_list(files, nfiles);
    if (buffer_kb > 64) CHECK(nfiles > 1); /* the 64 KiB run drops most of its events */
    CHECK(d9t_decode_run(d9_run_dir(), on_event, NULL) == 0);

    /* the disk does not fill here: every drop is a thread's full ring, reported as that
       thread's (one thread's last drops used to go out as write_error, tid 0, when it dropped
       between the drain's read of its count and its exit) */
    CHECK_EQ_U64(g_unattributed_drops, 0);
    CHECK_EQ_U64(g_poll_cpu, 0);
    uint64_t total_dropped = 0;
    for (int i = 0; i < THREADS; i++) {
        per_worker *p = &g_threads[i];
        CHECK_EQ_U64(p->decoded + p->dropped, p->emitted);
        CHECK_EQ_U64(p->backwards, 0);
        total_dropped += p->dropped;
    }
    printf("buffer %u KiB: %d segments, %" PRIu64 " events dropped (stats say %" PRIu64 ")\n",
           buffer_kb, nfiles, total_dropped, st.events_dropped);
    CHECK_EQ_U64(st.events_dropped, total_dropped);
    if (buffer_kb == 64) CHECK(total_dropped > 0); /* the tiny buffer must have overflowed */
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    /* A poll preempted for over DIAL9_POLL_CPU_MIN_US gets a PollCpuEvent the recorder makes,
     * not the producers: dropped from a full ring it counts among the thread's drops (once 2
     * over the emitted count, a TSan run under load). The accounting is of the events the
     * producers emit: the long polls' CPU time is off here (test_mt_poll_cpu tests it). */
    setenv("DIAL9_POLL_CPU_MIN_US", "0", 1);
    run(64);
    run(1024);
    return d9t_summary("recorder_accounting");
}
