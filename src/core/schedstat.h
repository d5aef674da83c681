/* /proc/thread-self/schedstat: the thread's time spent runnable on a run queue (ns), for an
 * unpark's sched_wait_ns, in one pread of an fd opened once per thread. */
#ifndef D9_CORE_SCHEDSTAT_H
#define D9_CORE_SCHEDSTAT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/thread_buffer.h"

extern bool d9_schedstat_enabled;
/* A park or unpark reads schedstat only when this many ticks have passed since the thread's
 * previous read (DIAL9_SCHEDSTAT_RESOLUTION_US; 0: every time). The read costs a system call
 * (~1 us of the thread's CPU here, d9_bench_governor); skipping it bounds the error of sched_wait_ns by
 * the resolution: a skipped unpark ended a park shorter than it (its sched_wait_ns is 0, the wait
 * counted at the next read), and the busy time a read-at-unpark also covers is shorter than it.
 * Set at start in ns, refined to ticks by the collector. */
extern uint64_t d9_schedstat_min_ticks;
/* Bumped by each start, so a thread's first park or unpark of a recording always reads. */
extern uint32_t d9_schedstat_run;

/* The hooks' fast paths decide whether schedstat is due with one compare of the time and one
 * of the recording (d9_schedstat_skips), from what the thread's last slow park or unpark kept
 * (d9_schedstat_keep): the due time (its last read's ticks + d9_schedstat_min_ticks then;
 * UINT64_MAX without schedstat; 0 when this recording has not read yet) and the wait its
 * records carry until then (D9_NS_NOT_READ, or D9_NS_UNKNOWN without schedstat), instead of
 * three globals and the thread's two fields every call. A due time kept before the collector
 * refined d9_schedstat_min_ticks (ns -> ticks: larger) is early: that call takes the slow path,
 * which decides exactly and keeps the refined one. */
static inline void d9_schedstat_keep(d9_thread *t) {
    uint32_t run = __atomic_load_n(&d9_schedstat_run, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&d9_schedstat_enabled, __ATOMIC_RELAXED)) {
        t->schedstat_due = UINT64_MAX;
        t->park_wait = D9_NS_UNKNOWN;
    } else {
        t->schedstat_due = t->schedstat_run == run
                               ? t->schedstat_ticks + __atomic_load_n(&d9_schedstat_min_ticks, __ATOMIC_RELAXED)
                               : 0;
        t->park_wait = D9_NS_NOT_READ;
    }
    t->schedstat_kept_run = run; /* last: a start since the loads above is seen at the next call */
}
static inline bool d9_schedstat_skips(const d9_thread *t, uint64_t now) {
    return now < t->schedstat_due && t->schedstat_kept_run == __atomic_load_n(&d9_schedstat_run, __ATOMIC_RELAXED);
}

/* After a slow park or unpark at `now`: keep anew what the next fast path decides from, where
 * it no longer holds (t NULL: nothing). */
static inline void d9_schedstat_keep_if_stale(d9_thread *t, uint64_t now) {
    if (t && !d9_schedstat_skips(t, now)) d9_schedstat_keep(t);
}

/* Reads done by every thread so far (__atomic, relaxed): the cost governor's schedstat rate. */
extern uint64_t d9_schedstat_reads;

/* Read the run-queue wait of the calling thread `t`; D9_NS_UNKNOWN when unavailable. */
void d9_schedstat_read(d9_thread *t, uint64_t *wait_ns);
/* Whether this kernel offers the file (checked once at start, for the metadata). */
bool d9_schedstat_available(void);

#endif
