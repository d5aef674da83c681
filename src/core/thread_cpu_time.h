/* The calling thread's CPU time, read at every park and unpark for their cpu_time_ns (dial9
 * requires it on both, and computes a worker's CPU ratio from consecutive values). */
#ifndef D9_CORE_THREAD_CPU_TIME_H
#define D9_CORE_THREAD_CPU_TIME_H

#include <stdint.h>

/* The calling thread's CPU time in ns, current to the call (never a cached or estimated value);
 * 0 if the kernel refused, dial9's "not measured". One system call: see thread_cpu_time.c. */
uint64_t d9_thread_cpu_time_ns(void);

#endif
