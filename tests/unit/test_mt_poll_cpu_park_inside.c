/* A long poll with a park and an unpark inside it gets its exact CPU time (core/poll_cpu.h),
 * with the switch records off. A reader thread, after a park and unpark that give it its
 * task-clock page, runs ROUNDS polls of three kinds, in turn:
 *  - "switch first": 1 ms of CPU, a read() that blocks (a switch: another thread writes the
 *    pipe once it sees the reader blocked, tt_wait_blocked_in), then a park, a second blocking
 *    read(), an unpark and 1 ms of CPU: the park takes a new anchor after the switch and the
 *    unpark another one, so the thread's last value is no longer the begin's line;
 *  - "park first": 1 ms of CPU, a park, a blocking read(), an unpark, 1 ms of CPU;
 *  - "late unpark": as "park first" with 0.3 ms of CPU between the read's return and the unpark
 *    (what the kernel's wake path and the poller's return cost the thread, long under TSan):
 *    the unpark's page value is the CPU time at the sched-in, short by that run, and an end that
 *    estimated along its line left it out of the poll (the poll short by it, the next one over).
 * Each must have exactly one PollCpuEvent right after its PollEndEvent, exact, whose
 * cpu_time_ns is the CPU time the thread measured itself over the poll (its perf task clock
 * inside and around the hooks, poll_cpu_test_util.h), every poll, and whose off-CPU time holds
 * the waits. Before, the end compared the page with the last
 * anchor (the unpark's): the poll had no event at all, or "exact 0" when the thread was also
 * switched out after its unpark. Counts only: every read blocks however the threads are
 * scheduled, and the slack is for the recorder's few us (and what a stop of the vCPU adds to its
 * wall-time estimates, measured), not for a machine's speed. */
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/poll_cpu.h"
#include "poll_cpu_test_util.h"

#define ROUNDS 12
#define BURN_NS (1000u * 1000u)

static pct_pipe g_pipe = PCT_PIPE_INIT;
static _Atomic uint32_t g_worker = 255;
static int g_reads; /* the reads of all rounds, once they are planned */
static pct_measure g_self[ROUNDS];
static uint64_t g_events[ROUNDS];

#define LATE_UNPARK_BURN_NS (300u * 1000u)

static bool switch_first(int round) { return round % 3 == 0; }
static bool late_unpark(int round) { return round % 3 == 2; }
static const char *kind(int round) {
    return switch_first(round) ? "switch-first" : late_unpark(round) ? "late-unpark" : "park-first";
}

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < g_reads; i++) {
        pct_wait_reader_blocked(&g_pipe, i);
        pct_write_byte(&g_pipe);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    atomic_store(&g_pipe.reader_tid, gettid());
    atomic_store(&g_worker, d9_worker_begin("pollcpu-park", 0));
    pct_reference_open();
    d9_park(); /* the thread's page, its first anchor */
    d9_unpark();
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t events = d9_poll_cpu_events();
        pct_mark_before_begin(&g_self[i]);
        d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        pct_mark_after_begin(&g_self[i]);
        pct_burn(BURN_NS);
        if (switch_first(i)) pct_blocking_read(&g_pipe);
        d9_park();
        pct_blocking_read(&g_pipe);
        if (late_unpark(i)) pct_burn(LATE_UNPARK_BURN_NS);
        d9_unpark();
        pct_burn(BURN_NS);
        pct_mark_before_end(&g_self[i]);
        d9_poll_end();
        pct_mark_after_end(&g_self[i]);
        g_events[i] = d9_poll_cpu_events() - events;
        d9_park(); /* between polls, as a loop does */
        d9_unpark();
    }
    pct_reference_close();
    d9_worker_end();
    return NULL;
}

static void on_event(const d9_event *ev, void *ctx) { pct_on_event(ev, ctx); }

int main(void) {
    char *dir = d9t_mkdtemp("pollcpu-park");
    d9_config cfg;
    pct_config(&cfg, dir);
    unsetenv("DIAL9_POLL_CPU_MIN_US"); /* the default, 1000 us */
    CHECK(pipe(g_pipe.fd) == 0);
    if (!pct_start_or_skip(&cfg, dir)) {
        free(dir);
        return d9t_summary("mt_poll_cpu_park_inside");
    }
    for (int i = 0; i < ROUNDS; i++) g_reads += switch_first(i) ? 2 : 1;
    pthread_t r, w;
    pthread_create(&w, NULL, writer, NULL);
    pthread_create(&r, NULL, reader, NULL);
    pthread_join(r, NULL);
    pthread_join(w, NULL);
    d9_stop();

    pct_seen s = {.worker = atomic_load(&g_worker)};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    CHECK_EQ_U64(s.stray, 0);
    CHECK_EQ_U64(s.npolls, ROUNDS);
    pct_tally tally = PCT_TALLY_INIT;
    for (int i = 0; i < ROUNDS && i < s.npolls; i++) {
        const pct_poll *p = &s.polls[i];
        uint64_t wall = p->end - p->start;
        printf("%s poll %d: wall %.3f ms, CPU %.3f ms (the thread's task clock %.3f-%.3f ms, "
               "CLOCK_THREAD_CPUTIME_ID %.3f ms), events %d, exact %d\n",
               kind(i), i, wall / 1e6, p->cpu_ns / 1e6, pct_inside(&g_self[i]) / 1e6,
               pct_around(&g_self[i]) / 1e6, pct_thread_clock(&g_self[i]) / 1e6, p->cpu_events, p->exact);
        pct_check_exact(p, g_events[i], &g_self[i], i ? &g_self[i - 1] : NULL, &tally);
    }
    pct_report(&tally);
    if (d9t_failed == 0) d9t_rm_rf(dir);
    else printf("kept %s\n", dir);
    free(dir);
    return d9t_summary("mt_poll_cpu_park_inside");
}
