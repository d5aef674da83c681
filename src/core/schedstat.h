/* /proc/thread-self/schedstat: the thread's time on CPU and time spent runnable on a run queue
 * (both ns) in one pread of an fd opened once per thread. */
#ifndef D9_CORE_SCHEDSTAT_H
#define D9_CORE_SCHEDSTAT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/thread_buffer.h"

extern bool d9_schedstat_enabled;

/* Read both numbers for the calling thread `t`; D9_NS_UNKNOWN when unavailable. */
void d9_schedstat_read(d9_thread *t, uint64_t *cpu_ns, uint64_t *wait_ns);
/* Whether this kernel offers the file (checked once at start, for the metadata). */
bool d9_schedstat_available(void);

#endif
