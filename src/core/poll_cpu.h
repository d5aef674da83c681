/* A poll's exact CPU time when the thread was switched out inside it (issue #32 item 3): the
 * per-thread task-clock page (thread_cpu_clock.h) says, by its `lock`, whether the thread had a
 * sched-in since the poll began; only then, and only for a poll longer than
 * DIAL9_POLL_CPU_MIN_US (default 1000), the poll's end reads the task clock (one system call)
 * and records a PollCpuEvent {worker_id, cpu_time_ns: the poll's CPU time, exact}. A poll with
 * no switch inside costs a load and a compare at each end and nothing else: no event, no
 * system call. docs/kernel-sources.md "Off-CPU time of long polls".
 *
 * The poll's CPU time is cpu(end) - cpu(begin): cpu(end) by read() of the event; cpu(begin)
 * from the thread's last value (its park or unpark, or the last such poll end) plus the wall
 * time since, which holds when the page's lock at the begin was that value's (no switch in
 * between). When it was not (the thread was switched out between its last value and the poll's
 * begin) the begin's CPU time is not known: the event says exact 0 and cpu_time_ns 0. A thread
 * without its page at a poll's begin opens it there (its first poll); one refused it (past
 * D9_TCC_MAX_THREADS, seccomp) says exact 0 for each of its long polls: so a long poll without
 * an event had no switch inside, when the recording states poll_cpu on. */
#ifndef D9_CORE_POLL_CPU_H
#define D9_CORE_POLL_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/thread_cpu_clock.h"

/* "no page at the begin": odd locks, which no page has at rest; _ON while poll_cpu is on (its
 * long polls say they are not accounted) */
#define D9_POLL_CPU_NO_PAGE 1u
#define D9_POLL_CPU_NO_PAGE_ON 3u

typedef struct d9_poll_cpu_state {
    uint32_t lock;        /* the page's lock at the poll's begin (D9_POLL_CPU_NO_PAGE: none) */
    uint64_t begin_ticks; /* the poll's begin */
} d9_poll_cpu_state;

extern __thread d9_poll_cpu_state d9__tls_poll_cpu __attribute__((tls_model("initial-exec")));

/* A thread without its page at a poll's begin: open it (or note that it has none). */
void d9_poll_cpu_begin_slow(uint64_t ticks);

/* At a poll's begin (the hook's time `ticks`): two stores and the page's lock. */
static inline __attribute__((always_inline)) void d9_poll_cpu_begin(uint64_t ticks) {
    const volatile struct perf_event_mmap_page *p = d9__tls_cpu_clock.page;
    d9__tls_poll_cpu.begin_ticks = ticks;
    if (__builtin_expect(p != NULL, 1)) d9__tls_poll_cpu.lock = p->lock;
    else d9_poll_cpu_begin_slow(ticks);
}

/* A switch inside the poll that began at `begin_ticks` with the page's lock `begin_lock`: the
 * duration test, the read, the event. */
void d9_poll_cpu_end_slow(uint64_t end_ticks, uint32_t begin_lock, uint64_t begin_ticks);

/* At a poll's end, last in the hook (a tail call when taken: the hook's fast path keeps no
 * frame): nothing unless the lock moved. */
static inline __attribute__((always_inline)) void d9_poll_cpu_end(uint64_t ticks) {
    const volatile struct perf_event_mmap_page *p = d9__tls_cpu_clock.page;
    if (__builtin_expect(p != NULL ? p->lock != d9__tls_poll_cpu.lock : d9__tls_poll_cpu.lock == D9_POLL_CPU_NO_PAGE_ON, 0))
        d9_poll_cpu_end_slow(ticks, d9__tls_poll_cpu.lock, d9__tls_poll_cpu.begin_ticks);
}

/* A poll's end and the next one's begin at one time (d9__poll_end_begin): the begin's read of
 * the lock is the end's test. */
static inline __attribute__((always_inline)) void d9_poll_cpu_end_begin(uint64_t ticks) {
    const volatile struct perf_event_mmap_page *p = d9__tls_cpu_clock.page;
    uint32_t begin_lock = d9__tls_poll_cpu.lock;
    uint64_t begin_ticks = d9__tls_poll_cpu.begin_ticks;
    d9__tls_poll_cpu.begin_ticks = ticks;
    if (__builtin_expect(p != NULL, 1)) {
        uint32_t now = p->lock;
        d9__tls_poll_cpu.lock = now;
        if (__builtin_expect(now != begin_lock, 0)) d9_poll_cpu_end_slow(ticks, begin_lock, begin_ticks);
        return;
    }
    if (begin_lock == D9_POLL_CPU_NO_PAGE_ON) d9_poll_cpu_end_slow(ticks, begin_lock, begin_ticks);
    d9_poll_cpu_begin_slow(ticks);
}

/* At d9_start: DIAL9_POLL_CPU_MIN_US (0 turns it off) and the event's schema; -1 with the error
 * set on a bad value. `page`: the recording uses the task-clock page (else nothing is
 * accounted). */
int d9_poll_cpu_start(bool page);
/* What the metadata's poll_cpu says: "on: ..." or "off: why". */
const char *d9_poll_cpu_reason(void);
/* PollCpuEvents recorded by the calling thread (tests). */
uint64_t d9_poll_cpu_events(void);

#endif
