/* The calling thread's CPU time, read at every park and unpark for their cpu_time_ns (dial9
 * requires it on both, and computes a worker's CPU ratio from consecutive values). */
#ifndef D9_CORE_THREAD_CPU_TIME_H
#define D9_CORE_THREAD_CPU_TIME_H

#include <stdint.h>
#include <time.h>

/* Why a system call. The thread's CPU time has no vDSO path (the vDSO serves only the global
 * clocks), so clock_gettime(CLOCK_THREAD_CPUTIME_ID) enters the kernel, which folds in the
 * time run since the last tick: the value is current, unlike /proc/thread-self/schedstat's
 * first field (updated at ticks and switches, so a busy thread's park reads up to a tick stale;
 * that pread also costs more). The one source without a system call, the mmap page of a
 * task-bound perf event (PERF_COUNT_SW_TASK_CLOCK, or the dummy/switch event the switch source
 * opens per worker: there time_running is the thread's time on CPU since the event opened),
 * gives the current value only with cap_user_time (then time_running + the TSC delta since
 * the last update, scaled by time_mult/time_shift under the `lock` seqcount). Kernels set it
 * only with a stable TSC; on kvm-clock hosts with tsc=unstable (our CI's) it is 0, and without
 * it time_running is as of the thread's last switch-in: stale at every park after busy work.
 * So not here: one clock_gettime per park and unpark, its cost in d9_bench's hooks row.
 * Inline: a function of its own cost each park and unpark ~6 instructions of call and frame
 * around the system call (callgrind, test_poll_instructions). */

/* The calling thread's CPU time in ns, current to the call (never a cached or estimated value);
 * 0 if the kernel refused, dial9's "not measured". One system call, as said above. */
static inline uint64_t d9_thread_cpu_time_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
