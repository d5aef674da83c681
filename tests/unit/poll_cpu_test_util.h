/* Helpers of the long-poll CPU time tests (core/poll_cpu.h), with the switch records off: the
 * configuration, a start that skips where there is no task-clock page, a CPU burn, and the
 * trace's polls with the PollCpuEvent right after each one's end. Header-only. */
#ifndef D9_TESTS_POLL_CPU_TEST_UTIL_H
#define D9_TESTS_POLL_CPU_TEST_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "core/thread_cpu_clock.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define PCT_SLACK_NS (500u * 1000u) /* task clock vs CLOCK_THREAD_CPUTIME_ID, the hooks' own time */
#define PCT_MAX_POLLS 64

/* Burn ns of the thread's CPU time. */
static inline void pct_burn(uint64_t ns) {
    uint64_t until = tt_thread_cpu_ns() + ns;
    while (tt_thread_cpu_ns() < until) {
    }
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

/* A poll with one exact PollCpuEvent (events: those the recorder counted at its end) whose CPU
 * time is within its wall time, never over the thread's own measure self_cpu (+ the slack), and
 * at least half of it (less: the hook lost part of the poll). True when it is also within the
 * slack below self_cpu: on a busy VM a few polls in a hundred are not (the thread's clock counts
 * what the task clock leaves out: steal, the first park's perf_event_open; seen 1.4 of 2.3 ms
 * with two suites beside), so callers require that of most polls, not all: pct_check_most. */
static inline bool pct_check_exact(const pct_poll *p, uint64_t events, uint64_t self_cpu) {
    CHECK_EQ_U64(p->cpu_events, 1);
    CHECK_EQ_U64(events, 1);
    CHECK(p->exact);
    CHECK(p->cpu_ns * 2 + PCT_SLACK_NS >= self_cpu);
    CHECK(p->cpu_ns <= self_cpu + PCT_SLACK_NS);
    CHECK(p->cpu_ns <= p->end - p->start);
    return p->cpu_ns + PCT_SLACK_NS >= self_cpu;
}

/* Of n exact polls, `close` were within the slack of the thread's own measure: most must be. */
static inline void pct_check_most(int close, int n) {
    printf("polls within %.1f ms of the thread's own CPU time: %d of %d\n", PCT_SLACK_NS / 1e6, close, n);
    CHECK(close * 2 >= n);
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
