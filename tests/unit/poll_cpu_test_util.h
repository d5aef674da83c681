/* Helpers of the long-poll CPU time tests (core/poll_cpu.h), with the switch records off: the
 * configuration, a start that skips where there is no task-clock page, a CPU burn, and the
 * trace's polls with the PollCpuEvent right after each one's end, and the reference each poll's
 * CPU time is checked against: the thread's task clock around and inside its hooks.
 * Header-only. */
#ifndef D9_TESTS_POLL_CPU_TEST_UTIL_H
#define D9_TESTS_POLL_CPU_TEST_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "task_clock_test_util.h"
#include "core/thread_cpu_clock.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

/* How far a poll's exact CPU time may lie outside the thread's task clock read around (above)
 * and inside (below) its begin and end hooks: the kernel's return path after a sched-in that an
 * unpark's value leaves out (thread_cpu_clock.h), each hook's own time, interrupts in them.
 * Measured at load 10-13 (burners, ASan processes starting, a build; 40 runs of each test, 20 ASan
 * and not): up to 40.5 us below, 37.9 us above; the "100 us" gives 2.5 times that. */
#define PCT_TASK_CLOCK_SLACK_NS (100u * 1000u)
/* The same where perf refuses the task clock and CLOCK_THREAD_CPUTIME_ID stands in: that clock
 * charges a woken thread from its wake-up, not its switch-in (task_clock_test_util.h), by up to
 * 1.4 of 2.3 ms a poll under load, so only most polls are required within it. */
#define PCT_THREAD_CLOCK_SLACK_NS (500u * 1000u)
#define PCT_MAX_POLLS 64
/* The recorder caps a poll's CPU time at its wall time on its own tick rate (ticks times
 * d9_thread_cpu_ns_per_tick, truncated); the trace's begin and end come through the collector's
 * clock map, each rounded to a nanosecond, on a slope calibrated apart. A poll that ran all its
 * wall time (a switch of a few us inside, its begin estimated along the line) meets the cap:
 * CI's TSan run saw one over end - start. A part in 10^4 of the wall and 1 us allow the two
 * conversions' difference and nothing a miscount would make. */
static inline bool pct_cpu_within_wall(uint64_t cpu_ns, uint64_t start, uint64_t end) {
    uint64_t wall = end - start;
    bool ok = cpu_ns <= wall + wall / 10000 + 1000;
    if (!ok) printf("CPU time %llu ns over the wall time %llu ns\n", (unsigned long long)cpu_ns, (unsigned long long)wall);
    return ok;
}

/* Record into dir with no switch records: the CPU time alone must account. */
static inline void pct_config(d9_config *cfg, char *dir) {
    d9_config_init(cfg);
    cfg->trace_dir = dir;
    cfg->schedule_profile = false;
    cfg->cpu_profile = false;
}

/* Start recording; false (dial9 stopped, dir removed, "SKIP" said) where the thread CPU clock
 * has no page. On the TSC, the collector's slope comes first (ticks -> ns): waits for it. */
static inline bool pct_start_or_skip(d9_config *cfg, char *dir) {
    CHECK(d9_start(cfg) == 0);
    if (!__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED)) {
        printf("SKIP: no task-clock page here (%s)\n", d9_thread_cpu_clock_reason());
        d9_stop();
        d9t_rm_rf(dir);
        return false;
    }
    for (;;) {
        double per_tick;
        __atomic_load(&d9_thread_cpu_ns_per_tick, &per_tick, __ATOMIC_RELAXED);
        if (per_tick > 0) break;
        tt_sleep_ns(1000000);
    }
    return true;
}

typedef struct pct_poll {
    uint64_t start, end;
    int cpu_events;
    uint64_t cpu_ns;
    bool exact;
} pct_poll;

typedef struct pct_seen {
    uint32_t worker;
    uint64_t open;
    pct_poll polls[PCT_MAX_POLLS];
    int npolls;
    int stray; /* PollCpuEvents not right after a PollEnd of the worker */
    bool last_was_end;
} pct_seen;

/* One event of the trace: the worker's polls and the PollCpuEvents that follow their ends. */
static inline void pct_on_event(const d9_event *ev, pct_seen *s) {
    const char *name = ev->schema->name;
    bool mine = d9t_field_u(ev, "worker_id") == s->worker;
    if (!strcmp(name, "PollStartEvent") && mine) {
        s->open = ev->ts_ns;
        s->last_was_end = false;
    } else if (!strcmp(name, "PollEndEvent") && mine && s->open) {
        if (s->npolls < PCT_MAX_POLLS) s->polls[s->npolls++] = (pct_poll){.start = s->open, .end = ev->ts_ns};
        s->open = 0;
        s->last_was_end = true;
    } else if (!strcmp(name, "PollCpuEvent")) {
        if (!mine || !s->last_was_end || !s->npolls) {
            s->stray++;
            return;
        }
        pct_poll *p = &s->polls[s->npolls - 1];
        p->cpu_events++;
        p->cpu_ns = d9t_field_u(ev, "cpu_time_ns");
        p->exact = d9t_field_u(ev, "exact") == 1;
    } else if (mine) {
        s->last_was_end = false;
    }
}

/* The reference: the poll thread's perf task clock (task_clock_test_util.h), which starts and
 * stops at the switches as the recorder's page does, so a poll's CPU time lies between the
 * reads inside and around its hooks. Where perf refuses it, CLOCK_THREAD_CPUTIME_ID, said. */
static _Thread_local int pct_task_clock = -1;
static _Atomic int pct_task_clock_refused; /* errno of the first refusal, 0: none */

/* On the poll thread, before its polls. */
static inline void pct_reference_open(void) {
    int fd = tt_task_clock_open();
    if (fd >= 0) {
        pct_task_clock = fd;
        return;
    }
    atomic_store(&pct_task_clock_refused, -fd);
    printf("reference: CLOCK_THREAD_CPUTIME_ID, most polls within %.1f ms (perf's task clock refused: %s)\n",
           PCT_THREAD_CLOCK_SLACK_NS / 1e6, strerror(-fd));
}

static inline void pct_reference_close(void) {
    if (pct_task_clock >= 0) close(pct_task_clock);
    pct_task_clock = -1;
}

static inline uint64_t pct_reference_ns(void) {
    return pct_task_clock >= 0 ? tt_task_clock_ns(pct_task_clock) : tt_thread_cpu_ns();
}

/* One instant of the poll thread: its clocks, its context switches so far, and the wall time it
 * has spent off the task clock so far over the stretches measured (pct_point_now). */
typedef struct pct_point {
    uint64_t wall, cpu, thread_cpu; /* thread_cpu: CLOCK_THREAD_CPUTIME_ID, printed beside */
    long switches;
    uint64_t unaccounted;
} pct_point;
static _Thread_local uint64_t pct_unaccounted_ns;
static _Thread_local pct_point pct_last;
static _Thread_local bool pct_has_last;

/* The thread's clocks now. `stretch`: the stretch since the last point has no blocking call in
 * it; when the thread was not switched out in it either, its wall time less its task clock is
 * the host stopping the vCPU, which the recorder's estimates (the wall time since the thread's
 * last value, taken only while no switch happened: thread_cpu_clock.h) count as CPU time and
 * the task clock does not: added to pct_unaccounted_ns. */
static inline pct_point pct_point_now(bool stretch) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    pct_point p = {.thread_cpu = tt_thread_cpu_ns(), .cpu = pct_reference_ns(), .wall = tt_now(),
                   .switches = ru.ru_nvcsw + ru.ru_nivcsw};
    if (stretch && pct_has_last && p.switches == pct_last.switches && p.wall - pct_last.wall > p.cpu - pct_last.cpu)
        pct_unaccounted_ns += (p.wall - pct_last.wall) - (p.cpu - pct_last.cpu);
    p.unaccounted = pct_unaccounted_ns;
    pct_last = p;
    pct_has_last = true;
    return p;
}

/* Burn ns of the thread's CPU time, a measured stretch. */
static inline void pct_burn(uint64_t ns) {
    pct_point_now(false);
    uint64_t until = tt_thread_cpu_ns() + ns;
    while (tt_thread_cpu_ns() < until) {
    }
    pct_point_now(true);
}

/* One poll's reference, taken by its thread: pct_mark_* in this order around its d9_poll_begin
 * and d9_poll_end calls (the code between the marks outside a poll, and the hooks, are measured
 * stretches; so are its burns). */
typedef struct pct_measure {
    pct_point before_begin, after_begin, before_end, after_end;
} pct_measure;

static inline void pct_mark_before_begin(pct_measure *m) { m->before_begin = pct_point_now(true); }
static inline void pct_mark_after_begin(pct_measure *m) { m->after_begin = pct_point_now(true); }
static inline void pct_mark_before_end(pct_measure *m) { m->before_end = pct_point_now(true); }
static inline void pct_mark_after_end(pct_measure *m) { m->after_end = pct_point_now(true); }

/* The reference's CPU time inside the hooks and around them; CLOCK_THREAD_CPUTIME_ID's inside. */
static inline uint64_t pct_inside(const pct_measure *m) { return m->before_end.cpu - m->after_begin.cpu; }
static inline uint64_t pct_around(const pct_measure *m) { return m->after_end.cpu - m->before_begin.cpu; }
static inline uint64_t pct_thread_clock(const pct_measure *m) {
    return m->before_end.thread_cpu - m->after_begin.thread_cpu;
}

/* The polls checked against the reference: the worst distances, for the report. */
typedef struct pct_tally {
    int polls, close;           /* close: within the fallback's slack */
    int64_t worst_below_inside; /* the reference inside less the poll's CPU time, at most */
    int64_t worst_above_around; /* the poll's CPU time less the reference around, at most */
    int64_t worst_thread_clock_over, worst_thread_clock_under; /* CLOCK_THREAD_CPUTIME_ID inside over / under
                                                                * the poll's CPU time, at most */
    int64_t worst_stalls;       /* the widest widening of the slack (the vCPU's stops) */
} pct_tally;
#define PCT_TALLY_INIT                                                                                        \
    {.worst_below_inside = INT64_MIN, .worst_above_around = INT64_MIN, .worst_thread_clock_over = INT64_MIN,       \
     .worst_thread_clock_under = INT64_MIN}

static inline int64_t pct_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* (Checked on any thread once the poll thread is joined: pct_task_clock_refused says its clock.)
 * A poll with one exact PollCpuEvent (events: those the recorder counted at its end) whose CPU
 * time is within its wall time and, on the task clock, between the reference inside its hooks
 * and around them, within PCT_TASK_CLOCK_SLACK_NS and the vCPU's stops in the measured stretches
 * since the previous poll's begin (prev; NULL: the first), which the recorder's begin and end
 * may have estimated over: every poll. On the fallback
 * clock, at least half the reference and never over it (+ its slack); most polls within its
 * slack below it (pct_report). */
static inline void pct_check_exact(const pct_poll *p, uint64_t events, const pct_measure *m,
                                   const pct_measure *prev, pct_tally *t) {
    CHECK_EQ_U64(p->cpu_events, 1);
    CHECK_EQ_U64(events, 1);
    CHECK(p->exact);
    CHECK(pct_cpu_within_wall(p->cpu_ns, p->start, p->end));
    uint64_t inside = pct_inside(m), around = pct_around(m);
    uint64_t stalls = m->after_end.unaccounted - (prev ? prev->after_begin : m->before_begin).unaccounted;
    uint64_t slack = PCT_TASK_CLOCK_SLACK_NS + stalls;
    int64_t cpu = (int64_t)p->cpu_ns, thread_over = (int64_t)pct_thread_clock(m) - cpu;
    t->polls++;
    t->worst_below_inside = pct_max(t->worst_below_inside, (int64_t)inside - cpu);
    t->worst_above_around = pct_max(t->worst_above_around, cpu - (int64_t)around);
    t->worst_thread_clock_over = pct_max(t->worst_thread_clock_over, thread_over);
    t->worst_thread_clock_under = pct_max(t->worst_thread_clock_under, -thread_over);
    t->worst_stalls = pct_max(t->worst_stalls, (int64_t)stalls);
    if (!atomic_load(&pct_task_clock_refused)) {
        CHECK(p->cpu_ns + slack >= inside);
        CHECK(p->cpu_ns <= around + slack);
        return;
    }
    CHECK(p->cpu_ns * 2 + PCT_THREAD_CLOCK_SLACK_NS >= inside);
    CHECK(p->cpu_ns <= inside + PCT_THREAD_CLOCK_SLACK_NS);
    t->close += p->cpu_ns + PCT_THREAD_CLOCK_SLACK_NS >= inside;
}

/* The worst distances, and on the fallback clock: most polls within its slack. */
static inline void pct_report(const pct_tally *t) {
    printf("polls checked: %d; worst: %.1f us below the task clock inside the hooks, %.1f us above it around them; "
           "CLOCK_THREAD_CPUTIME_ID inside over it by %.1f us, under by %.1f us; slack %.0f us + up to %.1f us of "
           "vCPU stops\n",
           t->polls, t->worst_below_inside / 1e3, t->worst_above_around / 1e3, t->worst_thread_clock_over / 1e3,
           t->worst_thread_clock_under / 1e3,
           PCT_TASK_CLOCK_SLACK_NS / 1e3, t->worst_stalls / 1e3);
    if (!atomic_load(&pct_task_clock_refused)) return;
    printf("polls within %.1f ms of CLOCK_THREAD_CPUTIME_ID: %d of %d\n", PCT_THREAD_CLOCK_SLACK_NS / 1e6, t->close,
           t->polls);
    CHECK(t->close * 2 >= t->polls);
}

/* A pipe that a reader blocks on and a writer writes only once the reader is blocked in its
 * read(): every such read is a switch, however the threads are scheduled. */
typedef struct pct_pipe {
    int fd[2];
    _Atomic pid_t reader_tid;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int announced; /* reads the reader has begun */
} pct_pipe;
#define PCT_PIPE_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER}

/* The reader's read of one byte, announced first. */
static inline void pct_blocking_read(pct_pipe *p) {
    pthread_mutex_lock(&p->lock);
    p->announced++;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    char c;
    if (read(p->fd[0], &c, 1) != 1) perror("read");
}

/* The writer: wait until the reader is blocked in its read number i (from 0). */
static inline void pct_wait_reader_blocked(pct_pipe *p, int i) {
    pthread_mutex_lock(&p->lock);
    while (p->announced <= i) pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    CHECK(tt_wait_blocked_in(atomic_load(&p->reader_tid), SYS_read, (uint64_t)p->fd[0]));
}

/* The writer: the byte that ends the reader's wait. */
static inline void pct_write_byte(pct_pipe *p) {
    char c = 'x';
    if (write(p->fd[1], &c, 1) != 1) perror("write");
}

#endif
