/* A poll's exact CPU time when the thread was switched out inside it (issue #32 item 3): the
 * per-thread task-clock page (thread_cpu_clock.h) says, by its `lock`, whether the thread had a
 * sched-in since the poll began; only then, and only for a poll longer than
 * DIAL9_POLL_CPU_MIN_US (default 1000), the poll's end reads the task clock (one system call)
 * and records a PollCpuEvent {worker_id, cpu_time_ns: the poll's CPU time, exact}. A poll with
 * no switch inside costs a store and a compare at its begin and a compare at its end: no
 * event, no system call. With the thread's switch ring (thread_cpu_switch_ring.h) the values
 * after a switch below come from the kernel's switch records, exact, and nothing reads at all.
 * docs/kernel-sources.md "Off-CPU time of long polls".
 *
 * The poll's CPU time is cpu(end) - cpu(begin): cpu(end) by read() of the event; cpu(begin)
 * from the thread's last value (its park or unpark, or the last such read) plus the wall time
 * since, which holds when the page's lock at the begin is that value's (no switch in between).
 * When it is not (the thread was switched out since its last value: preempted between polls,
 * or inside a short poll; or its last value was a park's lower bound, which leaves no line:
 * thread_cpu_clock.h), the begin reads the task clock: a poll that may turn out long needs an
 * exact begin, which only a read or a sched-in after a sleep gives (the park after it then
 * reads nothing).
 * The begin keeps that lock (poll_lock): the end compares the page's with it, so a switch
 * anywhere inside the poll is seen, even when a park and unpark inside it took new values since
 * (a new anchor keeps the line the poll began on: d9_tcc_keep_poll_line), and the begin's CPU
 * time is then that line's; the end's is the thread's current line's, or read. A thread
 * has its page from its first park or unpark on (where the adapters and the shim take its CPU
 * time); before, and on a thread refused one (past D9_TCC_MAX_THREADS, seccomp), its polls are
 * not accounted: poll_page is then a page whose lock never moves, so that the hooks test
 * nothing else (test_poll_instructions counts them). With DIAL9_THREAD_CPU=lazy a thread has its
 * page only from its first poll over the threshold (thread_cpu_clock_lazy.h): until then its
 * poll_page is one whose lock is never the thread's, so that each poll's end measures the poll
 * here and says the long one unknown (a PollCpuEvent, exact false) before opening the page. */
#ifndef D9_CORE_POLL_CPU_H
#define D9_CORE_POLL_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "core/thread_cpu_clock.h"
#include "core/thread_cpu_clock_lazy.h"

/* The thread's page moved since its last CPU-time value (or that value left no line), before a
 * poll's begin: read the task clock now (one system call), so that the poll's begin has a
 * known CPU time. */
void d9_poll_cpu_begin_slow(uint64_t ticks);
/* A switch inside the poll that began at `begin_ticks`: the duration test, the read, the
 * event. */
void d9_poll_cpu_end_slow(uint64_t end_ticks, uint64_t begin_ticks);
/* Whether d9_poll_cpu_end_slow records an event for that poll (its tests before the read: long
 * enough, a page of this recording): a hook that writes the poll's end with other records
 * writes it alone when one is due, so that the event follows it (d9__poll_end_park). */
bool d9_poll_cpu_end_due(uint64_t end_ticks, uint64_t begin_ticks);
/* d9_poll_cpu_end_begin's when the page moved. */
void d9_poll_cpu_end_begin_slow(uint64_t ticks);

/* DIAL9_POLL_CPU_MIN_US in the recorder's ticks, rounded down (0 until the TSC's slope is known):
 * a lazy thread's poll shorter than this is decided at its end inline, not by the slow twin. */
extern uint64_t d9_poll_cpu_lazy_min_ticks __attribute__((visibility("hidden")));
/* The ticks per ns changed (d9_start, the collector's TSC slope): d9_poll_cpu_lazy_min_ticks anew. */
void d9_poll_cpu_set_ns_per_tick(double ns_per_tick);

/* At a poll's begin (the hook's time `ticks`): the page's lock is the thread's last value's
 * (the anchor of its CPU time), or made so. A lazy thread without its page (whose poll_page's
 * lock is never its own) has nothing to make: its end measures the poll's wall time. */
static inline __attribute__((always_inline)) void d9_poll_cpu_begin(uint64_t ticks) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    s->poll_ticks = ticks;
    uint32_t lock = s->lock;
    s->poll_lock = lock; /* the slow twin sets it again after its new anchor */
    if (__builtin_expect(s->poll_page->lock != lock, 0) && s->poll_page != &d9_tcc_lazy_page)
        d9_poll_cpu_begin_slow(ticks);
}

/* No switch inside the poll so far (the page did not move since its begin's lock): its end has
 * no PollCpuEvent to write. */
static inline __attribute__((always_inline)) bool d9_poll_cpu_quiet(void) {
    return d9__tls_cpu_clock.poll_page->lock == d9__tls_cpu_clock.poll_lock;
}

/* A lazy thread without its page (thread_cpu_clock_lazy.h) whose poll ending at `ticks` is
 * shorter than DIAL9_POLL_CPU_MIN_US: nothing to record, decided here (a compare of its wall
 * ticks), not in the slow twin. Only tested where the page's quiet test failed. */
static inline __attribute__((always_inline)) bool d9_poll_cpu_lazy_short(uint64_t ticks) {
    const d9_tcc_state *s = &d9__tls_cpu_clock;
    return s->poll_page == &d9_tcc_lazy_page &&
           ticks - s->poll_ticks < __atomic_load_n(&d9_poll_cpu_lazy_min_ticks, __ATOMIC_RELAXED);
}

/* The poll ending at `ticks` records nothing more than its end: quiet, or a lazy thread's short
 * poll. */
static inline __attribute__((always_inline)) bool d9_poll_cpu_nothing_due(uint64_t ticks) {
    return __builtin_expect(d9_poll_cpu_quiet(), 1) || d9_poll_cpu_lazy_short(ticks);
}

/* At a poll's end, last in the hook (a tail call when taken: the hook's fast path keeps no
 * frame): nothing unless the page moved since the begin's lock (or a lazy thread's poll is long). */
static inline __attribute__((always_inline)) void d9_poll_cpu_end(uint64_t ticks) {
    if (__builtin_expect(!d9_poll_cpu_quiet(), 0) && !d9_poll_cpu_lazy_short(ticks))
        d9_poll_cpu_end_slow(ticks, d9__tls_cpu_clock.poll_ticks);
}

/* A poll's end and the next one's begin at one time (d9__poll_end_begin): one test for both
 * (the page did not move since the begin, so no new anchor was taken: poll_lock is still
 * `lock`, the next begin's; a lazy thread's short poll: its next begin is this time). */
static inline __attribute__((always_inline)) void d9_poll_cpu_end_begin(uint64_t ticks) {
    if (__builtin_expect(!d9_poll_cpu_quiet(), 0) && !d9_poll_cpu_lazy_short(ticks)) {
        d9_poll_cpu_end_begin_slow(ticks);
        return;
    }
    d9__tls_cpu_clock.poll_ticks = ticks;
}

/* DIAL9_POLL_CPU_MIN_US's default; a twentieth of it bounds how short a park's CPU time after a
 * switch may be (thread_cpu_clock.h: d9_tcc_park_slack_ns). */
#define D9_POLL_CPU_DEFAULT_MIN_US 1000

/* DIAL9_POLL_CPU_MIN_US (or the default) in *min_us; -1 with the error set on a bad value. */
int d9_poll_cpu_min_us(uint64_t *min_us);
/* At d9_start: DIAL9_POLL_CPU_MIN_US (0 turns it off) and the event's schema; -1 with the error
 * set on a bad value. `page`: the recording uses the task-clock page (else nothing is
 * accounted). */
int d9_poll_cpu_start(bool page);
/* What the metadata's poll_cpu says: "on: ..." or "off: why". */
const char *d9_poll_cpu_reason(void);
/* The threshold in ns (0: off). */
uint64_t d9_poll_cpu_min_ns(void);
/* A PollCpuEvent for the calling thread's latest closed poll: its CPU time unknown (exact false;
 * a thread without its page yet: thread_cpu_clock_lazy.h). */
void d9_poll_cpu_record_unknown(void);
/* PollCpuEvents recorded by the calling thread (tests). */
uint64_t d9_poll_cpu_events(void);

#endif
