/* The calling thread's CPU time as perf's task clock counts it (a per-thread
 * PERF_COUNT_SW_TASK_CLOCK event, read()): the reference for tests that bound a trace's on-CPU
 * and off-CPU parts. Header-only.
 *
 * The task clock runs while the thread's perf context is scheduled in, which the kernel does
 * beside writing the context-switch records (PERF_RECORD_SWITCH) the trace's off-CPU intervals
 * come from, so the two agree at every switch. CLOCK_THREAD_CPUTIME_ID does not: it is the
 * scheduler's sum_exec_runtime, which starts a thread's run at the run queue's last clock
 * update. When the wake-up of a thread preempts the CPU's task, the kernel skips the update at
 * the schedule() that follows, so the woken thread is charged from its wake-up: the preempted
 * task's way back to the scheduler and the context switch (20-80 us per switch on this VM at
 * load 15, ~130 us a poll under the suite's sanitizer runs, unbounded in principle), which the
 * switch records rightly place off CPU. At a switch-out it stops before the kernel takes the
 * context-switch sample (the recorder's stack, 2-63 us) and writes the record. It also leaves
 * out the host's steal time, which the trace's wall-clock intervals hold. */
#ifndef D9_TESTS_TASK_CLOCK_TEST_UTIL_H
#define D9_TESTS_TASK_CLOCK_TEST_UTIL_H

#include <stdint.h>
#include <unistd.h>

#include "core/thread_cpu_clock.h"

/* The calling thread's task-clock event, opened as the recorder opens its own: its fd, or
 * -errno (perf_event_open refused). */
static inline int tt_task_clock_open(void) { return d9_task_clock_open(false); }

/* The event's count: the thread's task clock in ns, up to now (0 when the read fails). */
static inline uint64_t tt_task_clock_ns(int fd) {
    uint64_t v = 0;
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) return 0;
    return v;
}

#endif
