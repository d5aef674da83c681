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

/* Reads done by every thread so far (__atomic, relaxed): the cost governor's schedstat rate. */
extern uint64_t d9_schedstat_reads;

/* Read the run-queue wait of the calling thread `t`; D9_NS_UNKNOWN when unavailable. */
void d9_schedstat_read(d9_thread *t, uint64_t *wait_ns);
/* Whether this kernel offers the file (checked once at start, for the metadata). */
bool d9_schedstat_available(void);

#endif
