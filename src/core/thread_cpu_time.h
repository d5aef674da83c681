/* The calling thread's CPU time by system call, for the cpu_time_ns of parks and unparks where
 * the task-clock page (thread_cpu_clock.h) is not to be had (dial9 requires it on both, and
 * computes a worker's CPU ratio from an unpark's and the next park's values).
 *
 * Read once per active period, at the park (d9_config.thread_cpu_time = park, the default): an
 * unpark carries the value of the park before it. Between the two the thread slept in its
 * poller, so the CPU time it would read differs only by what the kernel spent in the poller's
 * call itself (entering it and returning from it); that lands in the next active period, whose
 * ratio dial9 computes from this unpark's value to the next park's. The cost halves: one system
 * call per park/unpark pair instead of two (memcached: +1.99 -> ~+1 system call per request,
 * bench/README.md). `every` reads at both (the former behaviour), `off` at neither. */
#ifndef D9_CORE_THREAD_CPU_TIME_H
#define D9_CORE_THREAD_CPU_TIME_H

#include <stdint.h>
#include <time.h>

#include "dial9/dial9.h"

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
 * It says exactly whether the thread was switched, though, which is enough for a current value
 * without a system call at a park or unpark without a switch: thread_cpu_clock.h, taken first
 * where the kernel gives the event (DIAL9_THREAD_CPU=auto). What follows is the fallback: one
 * clock_gettime per park (and per unpark with `every`), its cost in d9_bench's hooks row.
 * Inline: a function of its own cost each park and unpark ~6 instructions of call and frame
 * around the system call (callgrind, test_poll_instructions). */

/* What a park leaves on its thread [0] and what its unpark compares that with [1] (hooks.c):
 * d9_config.thread_cpu_time (a d9_thread_cpu_time_mode) in the low 2 bits, the recording's
 * number (d9_schedstat_run) above them, the top bit set so that a key is never a thread's 0
 * (none); bit 30 of the unpark's is flipped unless the mode is `park`, so that it never equals
 * a park's. Set at d9_start. */
extern uint32_t d9_thread_cpu_time_key[2];
#define D9_THREAD_CPU_TIME_KEY(mode, run) ((uint32_t)(mode) | ((uint32_t)(run) << 2 & 0x3fffffffu) | 0x80000000u)
#define D9_THREAD_CPU_TIME_UNPARK_KEY(mode, run)                                            \
    (D9_THREAD_CPU_TIME_KEY(mode, run) ^ ((mode) == D9_THREAD_CPU_TIME_PARK ? 0 : 0x40000000u))

/* The calling thread's CPU time in ns, current to the call (never a cached or estimated value);
 * 0 if the kernel refused, dial9's "not measured". One system call, as said above. */
static inline uint64_t d9_thread_cpu_time_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
