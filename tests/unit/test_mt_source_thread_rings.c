/* With DIAL9_THREAD_CPU=ring the off-CPU source's switch records come from the recorded
 * threads' own task-clock events (one event per recorded thread, core/thread_cpu_switch_ring.h),
 * not from inherited per-CPU switch events; with the defaults (auto), from those:
 *   - the metadata's source.off_cpu says so and the perf source has no switch event open at
 *     any time (d9_perf_switch_state: closed), so nothing is governed by windows (`governor`);
 *   - a worker that parks, then blocks in a pipe read() inside each of its polls (the writer
 *     writes BLOCK_NS after it saw the reader asleep in that read), has in every such poll one
 *     voluntary switch out and its switch in, at least BLOCK_NS apart, both inside the poll;
 *   - the writer, which records (wakes) but never parks, has records too (its event opened at its
 *     registration), and nothing was lost.
 *   - with the defaults, the inherited events, governed: the metadata says so.
 * On the code before (inherited switch events whatever DIAL9_THREAD_CPU says) the metadata and
 * the switch state checks fail. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "sources/perf_events.h"
#include "test_source_util.h"

#define READS 8
#define BLOCK_NS (3u * 1000u * 1000u)

static int g_pipe[2];
static _Atomic pid_t g_reader_tid, g_writer_tid;
static _Atomic int g_asked; /* reads the reader has begun */
static _Atomic bool g_switch_events_seen; /* the perf source's own switch events open at some point */

static void watch_switch_state(void) {
    uint64_t seq;
    if (d9_perf_switch_state(&seq) != D9_PERF_SWITCH_CLOSED) atomic_store(&g_switch_events_seen, true);
}

static void *writer(void *arg) {
    (void)arg;
    atomic_store(&g_writer_tid, gettid());
    for (int i = 0; i < READS; i++) {
        while (atomic_load(&g_asked) <= i) tt_sleep_ns(200000);
        CHECK(tt_wait_blocked_in(atomic_load(&g_reader_tid), SYS_read, (uint64_t)g_pipe[0]));
        tt_sleep_ns(BLOCK_NS);
        d9_wake(100 + (uint64_t)i); /* records: a registered thread that never parks */
        watch_switch_state();
        char c = 'x';
        if (write(g_pipe[1], &c, 1) != 1) perror("write");
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    atomic_store(&g_reader_tid, gettid());
    d9_worker_begin("rings", 0);
    for (int i = 0; i < READS; i++) {
        d9_park();
        tt_sleep_ns(500000);
        d9_unpark();
        d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        atomic_store(&g_asked, i + 1);
        char c;
        if (read(g_pipe[0], &c, 1) != 1) perror("read");
        d9_poll_end();
        watch_switch_state();
    }
    d9_worker_end();
    return NULL;
}

static void check_reads(const tt_trace *t) {
    uint32_t w = tt_worker_of(t, g_reader_tid);
    CHECK(w != 255);
    int good = 0;
    for (size_t i = 0; i < t->npolls; i++) {
        const tt_poll *p = &t->polls[i];
        if (p->worker != w) continue;
        int voluntary_outs;
        uint64_t longest = tt_longest_voluntary_off_cpu(t, g_reader_tid, p->start, p->end, &voluntary_outs);
        bool ok = voluntary_outs >= 1 && longest >= BLOCK_NS && longest <= p->end - p->start;
        good += ok;
        printf("poll %" PRIu64 ": %.2f ms, %d voluntary switch-outs, longest off-CPU %.2f ms%s\n", p->task,
               (double)(p->end - p->start) / 1e6, voluntary_outs, (double)longest / 1e6, ok ? "" : "  <- unexpected");
    }
    CHECK_EQ_U64(good, READS);
    size_t writer_switches = 0;
    for (size_t j = 0; j < t->nswitches; j++) writer_switches += t->switches[j].tid == (uint32_t)g_writer_tid;
    printf("writer (registered, never parks): %zu switch records\n", writer_switches);
    CHECK(writer_switches >= READS); /* it sleeps at least once a round */
}

/* The defaults: the inherited events and the governor, no ring (a recording of its own). */
static void defaults_keep_inherited_events(void) {
    char *dir = d9t_mkdtemp("thread_rings_defaults");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == 0);
    d9_wake(1);
    d9_stop();
    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    printf("defaults: source.off_cpu = %s\n", off);
    if (!tt_starts_with(off, "inactive")) {
        CHECK(tt_starts_with(off, "active: perf context-switch records (per-CPU events inherited"));
        CHECK(strstr(tt_meta(&t, "governor"), "not governing") == NULL);
    }
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    CHECK(pipe(g_pipe) == 0);
    defaults_keep_inherited_events();
    char *dir = d9t_mkdtemp("thread_rings");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(cfg.schedule_profile); /* off-CPU records on, the governor's budget 1 % */
    setenv("DIAL9_THREAD_CPU", "ring", 1);
    CHECK(d9_start(&cfg) == 0);
    pthread_t r, wr;
    pthread_create(&wr, NULL, writer, NULL);
    pthread_create(&r, NULL, reader, NULL);
    pthread_join(r, NULL);
    pthread_join(wr, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    const char *cpu = tt_meta(&t, "thread_cpu_clock");
    printf("source.off_cpu = %s\nthread_cpu_clock = %s\ngovernor = %s\n", off, cpu, tt_meta(&t, "governor"));
    if (tt_starts_with(off, "inactive: perf refused") || !tt_starts_with(cpu, "perf:")) {
        printf("SKIP: no perf switch records or no task-clock page on this host\n");
    } else {
        CHECK(tt_starts_with(off, "active: perf context-switch records from each recorded thread's own task-clock event"));
        CHECK(strstr(cpu, "the off-CPU source's switch records") != NULL);
        CHECK(strstr(tt_meta(&t, "governor"), "not governing") != NULL);
        CHECK(!atomic_load(&g_switch_events_seen)); /* no inherited switch event of the source's */
        check_reads(&t);
        CHECK_EQ_U64(t.lost, 0);
    }
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("source_thread_rings");
}
