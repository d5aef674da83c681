/* CPU samples line up with the polls they were taken in: a worker spins in a known function
 * inside polls; every CPU sample of that thread whose leaf frame is in the function must fall
 * inside one of those polls (clock alignment), the leaf frames must mostly be in it, and the
 * walk must reach the function's caller. With perf (when the host allows it) for a thread
 * created after start (inherited events) and one that existed before start (events attached
 * at start), and with the SIGPROF timer fallback (forced); the metadata must say which ran. */
#include <stdatomic.h>
#include <sys/syscall.h>

#include "check.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define POLLS 5
#define SPIN_NS (200u * 1000u * 1000u)
#define SLACK_NS (100u * 1000u)

static pid_t g_worker_tid;
static _Atomic int g_go = 1;

/* Almost all its time is in its own instructions: the clock (a system call) is read every
 * million iterations, ~1 ms. */
TT_NOINLINE static void spin_in_poll(uint64_t ns) {
    uint64_t end = tt_thread_cpu_ns() + ns; /* CPU time: the same samples on a busy host */
    do {
        TT_BURN_REGISTERS(1000000);
    } while (tt_thread_cpu_ns() < end);
}

TT_NOINLINE static void *run_worker(void *arg) {
    (void)arg;
    g_worker_tid = gettid();
    while (!atomic_load(&g_go)) tt_sleep_ns(1000000); /* started before the recorder */
    d9_worker_begin("cpu", 0);
    for (int i = 0; i < POLLS; i++) {
        d9_park();
        tt_sleep_ns(30u * 1000u * 1000u);
        d9_unpark();
        d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        spin_in_poll(SPIN_NS);
        d9_poll_end();
    }
    d9_worker_end();
    return NULL;
}

static void run(d9_sampler_mode mode, const char *expect_prefix, bool thread_before_start) {
    const char *label = mode == D9_SAMPLER_TIMER ? "timer" : thread_before_start ? "perf, thread from before start" : "perf";
    char *dir = d9t_mkdtemp("cpusamples");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.cpu_profile = true;
    cfg.cpu_sample_hz = 99;
    cfg.sampler = mode;
    pthread_t th;
    if (thread_before_start) {
        atomic_store(&g_go, 0);
        pthread_create(&th, NULL, run_worker, NULL);
        tt_sleep_ns(5u * 1000u * 1000u);
    }
    CHECK(d9_start(&cfg) == 0);
    if (thread_before_start) atomic_store(&g_go, 1);
    else pthread_create(&th, NULL, run_worker, NULL);
    pthread_join(th, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *note = tt_meta(&t, "source.cpu_profile");
    printf("%s: source.cpu_profile = %s\n", label, note);
    if (mode == D9_SAMPLER_PERF && tt_starts_with(note, "inactive: perf refused")) {
        printf("SKIP perf half: this host refuses perf_event_open (%s)\n", note);
        tt_free(&t);
        d9t_rm_rf(dir);
        free(dir);
        return;
    }
    CHECK(tt_starts_with(note, expect_prefix));

    tt_range spin = tt_function_range("spin_in_poll", (const void *)spin_in_poll);
    tt_range caller = tt_function_range("run_worker", (const void *)run_worker);
    CHECK(spin.hi > spin.lo && caller.hi > caller.lo);
    uint32_t worker = 255;
    for (uint32_t w = 0; w < 256; w++)
        if (t.worker_tid[w] == (uint32_t)g_worker_tid) worker = w;
    CHECK(worker != 255);

    size_t in_spin = 0, outside_poll = 0, with_caller = 0, in_polls = 0, in_polls_in_spin = 0;
    for (size_t i = 0; i < t.nsamples; i++) {
        const tt_sample *s = &t.samples[i];
        if (s->source != 0 || s->tid != (uint32_t)g_worker_tid || s->n == 0) continue;
        /* The user-space leaf: on a loaded machine a tick often lands in the kernel (an
         * interrupt, a page fault) on top of the function that was running. */
        uint32_t user = 0;
        while (user + 1 < s->n && s->frames[user] >= 0xffff800000000000ull) user++;
        bool leaf_in_spin = tt_in(spin, s->frames[user]);
        bool in_poll = tt_poll_at(&t, worker, s->ts, SLACK_NS) != NULL;
        if (in_poll) {
            in_polls++;
            in_polls_in_spin += leaf_in_spin;
            if (!leaf_in_spin && getenv("D9_TEST_VERBOSE")) {
                fprintf(stderr, "%s: in-poll sample not in spin_in_poll:", label);
                for (uint32_t k = 0; k < s->n && k < 8; k++) fprintf(stderr, " %" PRIx64, s->frames[k]);
                fprintf(stderr, "\n");
            }
        }
        if (!leaf_in_spin) continue;
        in_spin++;
        if (!in_poll) {
            outside_poll++;
            fprintf(stderr, "%s: sample at %" PRIu64 " in spin_in_poll but outside every poll\n", label, s->ts);
        }
        if (tt_stack_has(s->frames + 1, s->n - 1, caller)) with_caller++;
        CHECK_EQ_U64(s->worker, worker);
    }
    printf("%s: %zu polls, %zu samples on the worker in polls, %zu with the leaf in spin_in_poll, "
           "%zu outside a poll, %zu reach run_worker\n",
           label, t.npolls, in_polls, in_spin, outside_poll, with_caller);
    CHECK_EQ_U64(t.npolls, POLLS);
    CHECK(in_spin >= 40);               /* ~99 expected: 1 s of CPU at 99 Hz */
    CHECK_EQ_U64(outside_poll, 0);      /* clocks agree */
    CHECK(in_polls_in_spin * 10 >= in_polls * 8);
    CHECK(with_caller * 10 >= in_spin * 8); /* the walk goes past the leaf */
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    run(D9_SAMPLER_PERF, "active: perf", false);
    run(D9_SAMPLER_PERF, "active: perf", true);
    run(D9_SAMPLER_TIMER, "active: timer", false);
    return d9t_summary("source_cpu_samples");
}
