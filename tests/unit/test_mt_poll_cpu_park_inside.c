/* A long poll with a park and an unpark inside it gets its exact CPU time (core/poll_cpu.h),
 * with the switch records off. A reader thread, after a park and unpark that give it its
 * task-clock page, runs ROUNDS polls of two kinds, alternately:
 *  - "switch first": 1 ms of CPU, a read() that blocks (a switch: another thread writes the
 *    pipe once it sees the reader blocked, tt_wait_blocked_in), then a park, a second blocking
 *    read(), an unpark and 1 ms of CPU: the park takes a new anchor after the switch and the
 *    unpark another one, so the thread's last value is no longer the begin's line;
 *  - "park first": 1 ms of CPU, a park, a blocking read(), an unpark, 1 ms of CPU.
 * Each must have exactly one PollCpuEvent right after its PollEndEvent, exact, whose
 * cpu_time_ns is the CPU time the thread measured itself over the poll (CLOCK_THREAD_CPUTIME_ID)
 * and whose off-CPU time holds the waits. Before, the end compared the page with the last
 * anchor (the unpark's): the poll had no event at all, or "exact 0" when the thread was also
 * switched out after its unpark. Counts only: every read blocks however the threads are
 * scheduled, and the slack is for the hooks' own time, not for a machine's speed. */
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/poll_cpu.h"
#include "core/thread_cpu_clock.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define ROUNDS 12
#define BURN_NS (1000u * 1000u)
#define SLACK_NS (500u * 1000u) /* task clock vs CLOCK_THREAD_CPUTIME_ID, the hooks' own time */

static int g_pipe[2];
static _Atomic pid_t g_reader_tid;
static _Atomic uint32_t g_worker = 255;
static pthread_mutex_t g_step_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_step_cond = PTHREAD_COND_INITIALIZER;
static int g_step;      /* reads the reader is about to make */
static int g_reads;     /* all of them, once the rounds are planned */
static uint64_t g_self_cpu[ROUNDS];
static uint64_t g_events[ROUNDS];

static void burn(uint64_t ns) {
    uint64_t until = tt_thread_cpu_ns() + ns;
    while (tt_thread_cpu_ns() < until) {
    }
}

static bool switch_first(int round) { return round % 2 == 0; }

/* One read that blocks: announced first, so the writer writes only once the reader waits. */
static void blocking_read(void) {
    pthread_mutex_lock(&g_step_lock);
    g_step++;
    pthread_cond_signal(&g_step_cond);
    pthread_mutex_unlock(&g_step_lock);
    char c;
    if (read(g_pipe[0], &c, 1) != 1) perror("read");
}

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < g_reads; i++) {
        pthread_mutex_lock(&g_step_lock);
        while (g_step <= i) pthread_cond_wait(&g_step_cond, &g_step_lock);
        pthread_mutex_unlock(&g_step_lock);
        CHECK(tt_wait_blocked_in(atomic_load(&g_reader_tid), SYS_read, (uint64_t)g_pipe[0]));
        char c = 'x';
        if (write(g_pipe[1], &c, 1) != 1) perror("write");
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    atomic_store(&g_reader_tid, gettid());
    atomic_store(&g_worker, d9_worker_begin("pollcpu-park", 0));
    d9_park(); /* the thread's page, its first anchor */
    d9_unpark();
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t events = d9_poll_cpu_events();
        d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        uint64_t cpu0 = tt_thread_cpu_ns();
        burn(BURN_NS);
        if (switch_first(i)) blocking_read();
        d9_park();
        blocking_read();
        d9_unpark();
        burn(BURN_NS);
        g_self_cpu[i] = tt_thread_cpu_ns() - cpu0;
        d9_poll_end();
        g_events[i] = d9_poll_cpu_events() - events;
        d9_park(); /* between polls, as a loop does */
        d9_unpark();
    }
    d9_worker_end();
    return NULL;
}

typedef struct seen_poll {
    uint64_t start, end, cpu_ns;
    int cpu_events;
    bool exact;
} seen_poll;

typedef struct seen {
    uint32_t worker;
    uint64_t open;
    seen_poll polls[ROUNDS + 4];
    int npolls, stray;
    bool last_was_end;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    const char *name = ev->schema->name;
    bool mine = d9t_field_u(ev, "worker_id") == s->worker;
    if (!strcmp(name, "PollStartEvent") && mine) {
        s->open = ev->ts_ns;
        s->last_was_end = false;
    } else if (!strcmp(name, "PollEndEvent") && mine && s->open) {
        if (s->npolls < (int)(sizeof s->polls / sizeof s->polls[0]))
            s->polls[s->npolls++] = (seen_poll){.start = s->open, .end = ev->ts_ns};
        s->open = 0;
        s->last_was_end = true;
    } else if (!strcmp(name, "PollCpuEvent")) {
        if (!mine || !s->last_was_end || !s->npolls) {
            s->stray++;
            return;
        }
        seen_poll *p = &s->polls[s->npolls - 1];
        p->cpu_events++;
        p->cpu_ns = d9t_field_u(ev, "cpu_time_ns");
        p->exact = d9t_field_u(ev, "exact") == 1;
    } else if (mine) {
        s->last_was_end = false;
    }
}

int main(void) {
    char *dir = d9t_mkdtemp("pollcpu-park");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedule_profile = false; /* no switch records: the CPU time alone must account */
    cfg.cpu_profile = false;
    unsetenv("DIAL9_POLL_CPU_MIN_US"); /* the default, 1000 us */
    CHECK(pipe(g_pipe) == 0);
    CHECK(d9_start(&cfg) == 0);
    if (!__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED)) {
        printf("SKIP: no task-clock page here (%s)\n", d9_thread_cpu_clock_reason());
        d9_stop();
        d9t_rm_rf(dir);
        free(dir);
        return d9t_summary("mt_poll_cpu_park_inside");
    }
    for (;;) { /* on the TSC, the collector's slope comes first (ticks -> ns): wait for it */
        double per_tick;
        __atomic_load(&d9_thread_cpu_ns_per_tick, &per_tick, __ATOMIC_RELAXED);
        if (per_tick > 0) break;
        tt_sleep_ns(1000000);
    }
    for (int i = 0; i < ROUNDS; i++) g_reads += switch_first(i) ? 2 : 1;
    pthread_t r, w;
    pthread_create(&w, NULL, writer, NULL);
    pthread_create(&r, NULL, reader, NULL);
    pthread_join(r, NULL);
    pthread_join(w, NULL);
    d9_stop();

    seen s = {.worker = atomic_load(&g_worker)};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    CHECK_EQ_U64(s.stray, 0);
    CHECK_EQ_U64(s.npolls, ROUNDS);
    for (int i = 0; i < ROUNDS && i < s.npolls; i++) {
        const seen_poll *p = &s.polls[i];
        uint64_t wall = p->end - p->start;
        printf("%s poll %d: wall %.3f ms, CPU %.3f ms (measured by the thread %.3f ms), events %d, exact %d\n",
               switch_first(i) ? "switch-first" : "park-first", i, wall / 1e6, p->cpu_ns / 1e6, g_self_cpu[i] / 1e6,
               p->cpu_events, p->exact);
        CHECK_EQ_U64(p->cpu_events, 1);
        CHECK_EQ_U64(g_events[i], 1);
        CHECK(p->exact);
        CHECK(p->cpu_ns + SLACK_NS >= g_self_cpu[i]);
        CHECK(p->cpu_ns <= g_self_cpu[i] + SLACK_NS);
        CHECK(p->cpu_ns <= wall);
    }
    if (d9t_failed == 0) d9t_rm_rf(dir);
    else printf("kept %s\n", dir);
    free(dir);
    return d9t_summary("mt_poll_cpu_park_inside");
}
