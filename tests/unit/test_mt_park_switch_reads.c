/* The system calls a park costs after its thread was switched out inside its active period
 * (core/thread_cpu_clock.h), counted by the thread's exact_reads (each one read() of its
 * task-clock event), never timed. A worker thread, once a park and an unpark gave it its page,
 * runs ROUNDS active periods, each with a read() of a pipe that blocks inside it (a switch
 * however the threads are scheduled: the writer writes only once it sees the reader blocked,
 * pct_wait_reader_blocked).
 * With the switch ring (DIAL9_THREAD_CPU=ring where the kernel writes switch records:
 * core/thread_cpu_switch_ring.h), the same two recordings read nothing at all: every park and
 * unpark after a switch takes its value from the ring (counted by ring_values), the unpark whose
 * poller did not sleep included (before: one read a round there), and every park is exact (at
 * most the exact count read right after it, and not below it by more than that read's own
 * wall time and the slack below: printed).
 * Without it (DIAL9_THREAD_CPU=page, what auto takes), two recordings:
 *  - short periods (DIAL9_POLL_CPU_MIN_US at its largest, 10 s: a park may be 500 ms short of
 *    its exact CPU time, which no wait here comes near, so none is "long" whatever the host's
 *    load): a poll with the blocking read inside, its end, a park, then alternately
 *      "slept": a blocking read (the poller sleeps) and the unpark: neither reads (before this
 *        change the park read, once a round), the unpark takes the page's value;
 *      "did not sleep": the unpark right after the park: the park reads nothing, the unpark at
 *        most once (the read deferred to it, never added: once a round before too);
 *  - long periods (DIAL9_POLL_CPU_MIN_US=1: a park may be 50 ns short; the blocking read leaves
 *    more than that unaccounted): an unpark right after the park, the blocking read, a park:
 *    the park reads, once a round, wherever the thread's value before it came from the park's
 *    read (the unpark saw no sched-in since). Not after an unpark that took the page's value
 *    (the thread was preempted between the park and its unpark): that value is short by the
 *    kernel's wake-up path after the sched-in, which the next park's bound then counts as CPU
 *    (a vCPU the host stopped there made it exceed the off-CPU time: 1 run in ~100 here).
 * The trace's parks and unparks of the worker: values never go down, and each park's is at most
 * the exact count the thread read right after it (a lower bound where it did not read); how
 * far below, for the short periods, is printed. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/thread_cpu_clock.h"
#include "poll_cpu_test_util.h"

#define ROUNDS 16
#define MARKS (2 + 2 * ROUNDS) /* the first park and unpark, then each round's */

typedef struct round {
    uint32_t park_reads, unpark_reads, ring_values;
    bool after_page_value; /* the value before this round's park was an unpark's page value */
    uint64_t exact_after_park; /* base + the event's count, right after the park */
} round;

static pct_pipe g_pipe = PCT_PIPE_INIT;
static bool g_long, g_ring;
static int g_reads_planned;
static round g_rounds[ROUNDS];
static _Atomic pid_t g_tid;

static bool sleeps(int i) { return !g_long && i % 2 == 0; }

/* The exact value now, as the recorder takes it (the same base). */
static uint64_t exact_now(void) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    uint64_t e = d9_thread_cpu_clock_exact(s);
    return e == D9_TCC_NONE ? e : s->base_ns + e;
}

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < g_reads_planned; i++) {
        pct_wait_reader_blocked(&g_pipe, i);
        pct_write_byte(&g_pipe);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    atomic_store(&g_tid, gettid());
    atomic_store(&g_pipe.reader_tid, gettid());
    d9_worker_begin("parkreads", 0);
    d9_tcc_state *s = &d9__tls_cpu_clock;
    d9_park(); /* the thread's page, its first values */
    g_ring = d9_thread_cpu_clock_has_ring();
    uint32_t reads = s->exact_reads;
    d9_unpark(); /* a read (the park's value is the page's first, no line) */
    bool page_value = s->exact_reads == reads;
    for (int i = 0; i < ROUNDS; i++) {
        g_rounds[i].after_page_value = page_value;
        if (!g_long) d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        pct_blocking_read(&g_pipe); /* the switch inside the active period */
        if (!g_long) d9_poll_end();
        reads = s->exact_reads;
        uint32_t ring_values = s->ring_values;
        d9_park();
        uint32_t park_lock = s->lock;
        g_rounds[i].park_reads = s->exact_reads - reads;
        g_rounds[i].exact_after_park = exact_now();
        if (sleeps(i)) pct_blocking_read(&g_pipe); /* the poller's sleep */
        reads = s->exact_reads;
        d9_unpark();
        g_rounds[i].unpark_reads = s->exact_reads - reads;
        g_rounds[i].ring_values = s->ring_values - ring_values;
        page_value = s->exact_reads == reads && s->lock != park_lock; /* a sched-in since the park */
    }
    d9_worker_end();
    return NULL;
}

typedef struct marks {
    uint32_t tid;
    int n;
    bool park[MARKS];
    uint64_t cpu[MARKS];
} marks;

static void on_event(const d9_event *ev, void *ctx) {
    marks *m = ctx;
    bool park = d9t_is(ev, "WorkerParkEvent"), unpark = d9t_is(ev, "WorkerUnparkEvent");
    if ((!park && !unpark) || d9t_field_u(ev, "tid") != m->tid || m->n == MARKS) return;
    m->park[m->n] = park;
    m->cpu[m->n++] = d9t_field_u(ev, "cpu_time_ns");
}

/* One recording of ROUNDS periods, short or long, with the switch ring (where the kernel writes
 * switch records) or without (`page`); false where there is no task-clock page. */
static bool record(bool long_periods, bool ring) {
    setenv("DIAL9_THREAD_CPU", ring ? "ring" : "page", 1);
    g_long = long_periods;
    memset(g_rounds, 0, sizeof g_rounds);
    g_pipe.announced = 0;
    g_reads_planned = 0;
    for (int i = 0; i < ROUNDS; i++) g_reads_planned += sleeps(i) ? 2 : 1;
    setenv("DIAL9_POLL_CPU_MIN_US", long_periods ? "1" : "10000000", 1);
    char *dir = d9t_mkdtemp("parkreads");
    d9_config cfg;
    pct_config(&cfg, dir);
    if (!pct_start_or_skip(&cfg, dir)) {
        free(dir);
        return false;
    }
    pthread_t rd, wr;
    pthread_create(&wr, NULL, writer, NULL);
    pthread_create(&rd, NULL, reader, NULL);
    pthread_join(rd, NULL);
    pthread_join(wr, NULL);
    d9_stop();

    marks m = {.tid = (uint32_t)atomic_load(&g_tid)};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &m) == 0);
    CHECK_EQ_U64(m.n, MARKS);
    int park_reads = 0, unpark_reads = 0, slept_unpark_reads = 0, bounded = 0, never_down = 0, due = 0;
    uint64_t most_below = 0, sum_below = 0;
    for (int i = 0; i < ROUNDS; i++) {
        const round *r = &g_rounds[i];
        park_reads += (int)r->park_reads;
        if (!r->after_page_value) due++;
        if (!ring && long_periods && !r->after_page_value) CHECK_EQ_U64(r->park_reads, 1);
        unpark_reads += (int)r->unpark_reads;
        if (sleeps(i)) slept_unpark_reads += (int)r->unpark_reads;
        CHECK(r->unpark_reads <= 1);
        int k = 2 + 2 * i;
        if (k + 1 >= m.n) continue;
        CHECK(m.park[k] && !m.park[k + 1]);
        uint64_t park = m.cpu[k];
        never_down += park >= m.cpu[k - 1] && m.cpu[k + 1] >= park;
        bounded += r->exact_after_park != D9_TCC_NONE && park <= r->exact_after_park;
        uint64_t below = r->exact_after_park - park;
        if (park <= r->exact_after_park && below > most_below) most_below = below;
        if (park <= r->exact_after_park) sum_below += below;
    }
    CHECK_EQ_U64(never_down, ROUNDS);
    CHECK_EQ_U64(bounded, ROUNDS);
    CHECK_EQ_U64(slept_unpark_reads, 0); /* after a sleep, the page's value */
    if (ring && !g_ring) {
        printf("%s periods with the switch ring: SKIP: the thread has none here (%s)\n", long_periods ? "long" : "short",
               d9_thread_cpu_clock_reason());
    } else if (ring) {
        int ring_values = 0;
        for (int i = 0; i < ROUNDS; i++) ring_values += (int)g_rounds[i].ring_values;
        CHECK_EQ_U64(park_reads, 0);
        CHECK_EQ_U64(unpark_reads, 0); /* the poller that did not sleep too: before, one read each */
        CHECK(ring_values >= ROUNDS); /* each park after its switch at least */
        printf("%s periods with the switch ring: %d parks after a switch, %d values from the ring, %d exact reads at "
               "the parks, %d at the unparks (%d whose poller did not sleep); parks below the exact count read right "
               "after them by %.1f us on average, %.1f us at most\n",
               long_periods ? "long" : "short", ROUNDS, ring_values, park_reads, unpark_reads,
               long_periods ? ROUNDS : ROUNDS / 2, (double)sum_below / ROUNDS / 1e3, (double)most_below / 1e3);
    } else if (long_periods) {
        CHECK(due >= ROUNDS / 2); /* preempted between a park and its unpark in most rounds: no test */
        printf("long periods (page): %d parks after a switch, %d after a value from a read, %d exact reads at them, %d at "
               "the unparks\n", ROUNDS, due, park_reads, unpark_reads);
    } else {
        CHECK_EQ_U64(park_reads, 0);
        printf("short periods (page): %d parks after a switch, %d exact reads at them (before: one each), %d at the %d "
               "unparks whose poller did not sleep; parks below the exact count read right after them by %.1f us "
               "on average, %.1f us at most\n",
               ROUNDS, park_reads, unpark_reads, ROUNDS / 2, (double)sum_below / ROUNDS / 1e3,
               (double)most_below / 1e3);
    }
    if (d9t_failed == 0) d9t_rm_rf(dir);
    else printf("kept %s\n", dir);
    free(dir);
    return true;
}

int main(void) {
    CHECK(pipe(g_pipe.fd) == 0);
    if (record(false, true)) {
        record(true, true);
        record(false, false);
        record(true, false);
    }
    unsetenv("DIAL9_POLL_CPU_MIN_US");
    unsetenv("DIAL9_THREAD_CPU");
    return d9t_summary("mt_park_switch_reads");
}
