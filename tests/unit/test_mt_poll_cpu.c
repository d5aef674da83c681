/* A long poll's exact CPU time from the task-clock page (core/poll_cpu.h), with the switch
 * records off (schedule_profile false, as DIAL9_SCHEDULE_PROFILE_ENABLED=0):
 *  - a poll that burns 1 ms of CPU, blocks in read() on a pipe that another thread writes
 *    2 ms after the reader is seen blocked (tt_wait_blocked_in: every round blocks however the
 *    machine schedules the threads), and burns 1 ms more, gets one PollCpuEvent right after
 *    its PollEndEvent whose cpu_time_ns is the CPU time the thread measured itself by its perf
 *    task clock inside and around the poll's hooks (poll_cpu_test_util.h: the slack is the
 *    recorder's few us, widened by what a stop of the vCPU adds to its wall-time estimates; not
 *    CLOCK_THREAD_CPUTIME_ID, which is off by up to ms under load), every poll, and whose
 *    off-CPU time (wall - CPU) holds the 2 ms wait;
 *    exact exactly when the thread's last CPU-time value was taken under the lock the page had
 *    at the poll's begin (read here from the thread's state: a preemption between the two
 *    makes the begin's CPU time unknowable, and the event must say so); the first 3 come before
 *    the thread ever parks, so before it has its page: no event, no system call; every other
 *    one after them ends with its park (d9__poll_end_park, a loop's fused end): its event comes
 *    right after its end too (it came before, so readers gave it to the poll before), and its
 *    park keeps the end's time (a schedstat read due after a long poll took a later one);
 *  - a poll of 1.5 ms of CPU and no blocking gets no event and no system call when the page's
 *    lock did not move over it (classified by reading the lock around it: a preemption on a
 *    loaded machine moves it, and that poll must then have its one event, from one value after
 *    the switch: a read, or with the thread's switch ring (thread_cpu_switch_ring.h, asked for:
 *    DIAL9_THREAD_CPU=ring) the ring's, and then no read at all, at its begin or end);
 *  - a bad DIAL9_POLL_CPU_MIN_US fails d9_start, saying so. */
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/poll_cpu.h"
#include "poll_cpu_test_util.h"

#define ROUNDS 15
#define FIRST_ROUNDS 3 /* before the thread's first park: no page, not accounted */
/* every other poll after the first park ends with the park (d9__poll_end_park, as the shim's
 * loops and the adapters do), the last one not (the burns begin with a park) */
#define ENDS_WITH_PARK(i) ((i) >= FIRST_ROUNDS && (i) % 2 == 1 && (i) < ROUNDS - 1)
#define BURNS 40
#define BURN_NS (1000u * 1000u)
#define WAIT_NS (2u * 1000u * 1000u)

static pct_pipe g_pipe = PCT_PIPE_INIT;
static _Atomic uint32_t g_worker = 255;

typedef struct expect {
    pct_measure self;     /* the thread's own measure of the poll's CPU time */
    bool moved;           /* the page's lock after the poll's end is not its begin's anchor */
    uint64_t begin_reads; /* values after a switch at its begin (a switch before it): reads or the ring's */
    uint64_t reads;       /* ... at its end */
    uint64_t syscalls;    /* the task clock's system calls (read) at both */
    uint64_t events;      /* PollCpuEvents recorded at its end */
} expect;
static expect g_read[ROUNDS], g_burn[BURNS];

static uint32_t page_lock(void) { return d9__tls_cpu_clock.page ? d9__tls_cpu_clock.page->lock : 1; }

/* Values the thread took after a switch: by read() or from its switch ring. */
static uint32_t switch_values(void) { return d9__tls_cpu_clock.exact_reads + d9__tls_cpu_clock.ring_values; }
static bool g_ring;

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pct_wait_reader_blocked(&g_pipe, i);
        tt_sleep_ns(WAIT_NS);
        pct_write_byte(&g_pipe);
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    atomic_store(&g_pipe.reader_tid, gettid());
    atomic_store(&g_worker, d9_worker_begin("pollcpu", 0));
    pct_reference_open();
    CHECK(d9__tls_cpu_clock.page == NULL);
    for (int i = 0; i < ROUNDS; i++) {
        if (i >= FIRST_ROUNDS) {
            if (!ENDS_WITH_PARK(i - 1))
                d9_park(); /* an event loop's poller call: the thread's CPU time, its anchor */
            d9_unpark();
        }
        uint64_t events = d9_poll_cpu_events();
        pct_mark_before_begin(&g_read[i].self);
        uint32_t page_before = i >= FIRST_ROUNDS ? d9__tls_cpu_clock.page->lock : 0;
        d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        uint32_t anchor = d9__tls_cpu_clock.lock;
        pct_mark_after_begin(&g_read[i].self);
        CHECK((d9__tls_cpu_clock.page != NULL) == (i >= FIRST_ROUNDS));
        if (i >= FIRST_ROUNDS) { /* anchored: on the page's line as of the begin (a switch since moves the page on) */
            CHECK(anchor % 2 == 0);
            CHECK(anchor >= page_before);
            CHECK(anchor <= d9__tls_cpu_clock.page->lock);
        }
        pct_burn(BURN_NS);
        pct_blocking_read(&g_pipe);
        pct_burn(BURN_NS);
        pct_mark_before_end(&g_read[i].self);
        if (ENDS_WITH_PARK(i))
            d9__poll_end_park(); /* a loop's fused end and park: its PollCpuEvent still after the end */
        else
            d9_poll_end();
        pct_mark_after_end(&g_read[i].self);
        g_read[i].events = d9_poll_cpu_events() - events;
    }
    for (int i = 0; i < BURNS; i++) {
        d9_park();
        d9_unpark();
        uint64_t events = d9_poll_cpu_events();
        g_ring = d9_thread_cpu_clock_has_ring();
        uint32_t reads = switch_values(), syscalls = d9__tls_cpu_clock.exact_reads;
        d9_poll_begin(200 + (uint64_t)i, D9_HERE);
        uint32_t anchor = d9__tls_cpu_clock.lock; /* the begin's: set there, moved by no switch */
        uint32_t begin_reads = switch_values();
        pct_burn(BURN_NS * 3 / 2);
        d9_poll_end();
        uint32_t end_reads = switch_values();
        g_burn[i].syscalls = d9__tls_cpu_clock.exact_reads - syscalls;
        g_burn[i].events = d9_poll_cpu_events() - events;
        /* read after the end: a switch since can only make it look moved, never hide one */
        g_burn[i].moved = page_lock() != anchor;
        g_burn[i].begin_reads = begin_reads - reads;
        g_burn[i].reads = end_reads - begin_reads;
    }
    pct_reference_close();
    d9_worker_end();
    return NULL;
}

/* ---------------------------------------------------------------- the trace */

typedef struct seen {
    pct_seen polls;
    char poll_cpu_meta[200];
    uint64_t parks[ROUNDS + BURNS + 8]; /* the worker's parks' times */
    int nparks;
} seen;

static bool parked_at(const seen *s, uint64_t ts) {
    for (int i = 0; i < s->nparks; i++)
        if (s->parks[i] == ts) return true;
    return false;
}

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    const char *name = ev->schema->name;
    if (!strcmp(name, "SegmentMetadataEvent")) {
        const d9_value *m = d9_event_field(ev, "entries");
        for (uint32_t i = 0; m && i < m->map.count; i++)
            if (m->map.items[i].key.len == 8 && !memcmp(m->map.items[i].key.ptr, "poll_cpu", 8))
                snprintf(s->poll_cpu_meta, sizeof s->poll_cpu_meta, "%.*s", (int)m->map.items[i].value.len,
                         m->map.items[i].value.ptr);
        return;
    }
    if (!strcmp(name, "WorkerParkEvent") && d9t_field_u(ev, "worker_id") == s->polls.worker &&
        s->nparks < (int)(sizeof s->parks / sizeof s->parks[0]))
        s->parks[s->nparks++] = ev->ts_ns;
    pct_on_event(ev, &s->polls);
}

int main(void) {
    char *dir = d9t_mkdtemp("pollcpu");
    d9_config cfg;
    pct_config(&cfg, dir);

    setenv("DIAL9_POLL_CPU_MIN_US", "1ms", 1);
    CHECK(d9_start(&cfg) != 0);
    printf("DIAL9_POLL_CPU_MIN_US=1ms: %s\n", d9_last_error());
    CHECK(strstr(d9_last_error(), "DIAL9_POLL_CPU_MIN_US") != NULL);
    unsetenv("DIAL9_POLL_CPU_MIN_US"); /* the default, 1000 us */

    CHECK(pipe(g_pipe.fd) == 0);
    /* the switch ring asked for (auto takes the page alone): its rule, no system call after a
     * switch, is checked where the kernel gives it; the page's rules where it does not */
    setenv("DIAL9_THREAD_CPU", "ring", 1);
    if (!pct_start_or_skip(&cfg, dir)) {
        free(dir);
        return d9t_summary("mt_poll_cpu");
    }
    pthread_t r, w;
    pthread_create(&w, NULL, writer, NULL);
    pthread_create(&r, NULL, reader, NULL);
    pthread_join(r, NULL);
    pthread_join(w, NULL);
    d9_stop();
    unsetenv("DIAL9_THREAD_CPU");

    seen s = {.polls.worker = atomic_load(&g_worker)};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    printf("poll_cpu = %s\n", s.poll_cpu_meta);
    CHECK(tt_starts_with(s.poll_cpu_meta, "on: polls over 1000 us"));
    CHECK_EQ_U64(s.polls.stray, 0);
    CHECK_EQ_U64(s.polls.npolls, ROUNDS + BURNS);
    int exact = 0;
    pct_tally tally = PCT_TALLY_INIT;
    for (int i = 0; i < ROUNDS && i < s.polls.npolls; i++) {
        const pct_poll *p = &s.polls.polls[i];
        const expect *e = &g_read[i];
        uint64_t wall = p->end - p->start;
        printf("read poll %d: wall %.3f ms, CPU %.3f ms (the thread's task clock %.3f-%.3f ms, "
               "CLOCK_THREAD_CPUTIME_ID %.3f ms), exact %d\n",
               i, wall / 1e6, p->cpu_ns / 1e6, pct_inside(&e->self) / 1e6, pct_around(&e->self) / 1e6,
               pct_thread_clock(&e->self) / 1e6,
               p->exact);
        if (i < FIRST_ROUNDS) { /* no page yet: not accounted */
            CHECK_EQ_U64(p->cpu_events, 0);
            CHECK_EQ_U64(e->events, 0);
            continue;
        }
        pct_check_exact(p, e->events, &e->self, &g_read[i - 1].self, &tally); /* exact: its begin anchored (checked above), no park inside */
        /* ended with its park: the park at the end's time, its schedstat read due or not */
        if (ENDS_WITH_PARK(i)) CHECK(parked_at(&s, p->end));
        exact += p->exact;
        CHECK(wall - p->cpu_ns + PCT_TASK_CLOCK_SLACK_NS >= WAIT_NS); /* off-CPU: the wait for the writer */
    }
    printf("read polls after the first park: %d of %d exact\n", exact, ROUNDS - FIRST_ROUNDS);
    pct_report(&tally);
    int still = 0, switched = 0, before = 0, syscalls = 0;
    for (int i = 0; i < BURNS && ROUNDS + i < s.polls.npolls; i++) {
        const pct_poll *p = &s.polls.polls[ROUNDS + i];
        const expect *e = &g_burn[i];
        CHECK_EQ_U64(p->cpu_events, e->events);
        CHECK(e->begin_reads <= 2); /* a switch between the park and the begin: the anchor */
        if (g_ring) CHECK_EQ_U64(e->syscalls, 0); /* every value after a switch from the ring */
        syscalls += (int)e->syscalls;
        before += e->begin_reads > 0;
        if (!e->moved) { /* no switch inside, for certain: nothing at all */
            still++;
            CHECK_EQ_U64(e->events, 0);
            CHECK_EQ_U64(e->reads, 0);
        }
        if (e->events) { /* the hook saw a switch inside: one read, one exact event */
            switched++;
            CHECK(e->moved);
            CHECK_EQ_U64(e->events, 1);
            CHECK_EQ_U64(e->reads, 1);
            CHECK(p->exact);
            CHECK(pct_cpu_within_wall(p->cpu_ns, p->start, p->end));
        } else {
            CHECK_EQ_U64(e->reads, 0);
        }
    }
    printf("busy polls of 1.5 ms: %d of %d without a switch (no event, no system call), %d preempted inside "
           "(one value after the switch and an exact event each), %d preempted before their begin (its value); "
           "%d system calls in all (%s)\n",
           still, BURNS, switched, before, syscalls, g_ring ? "the switch ring" : "no switch ring: reads");
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("mt_poll_cpu");
}
