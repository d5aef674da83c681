/* The recorder's threads name themselves (prctl on the calling thread). Naming one from
 * another thread writes /proc/self/task/TID/comm, and a thread whose /proc entries were
 * looked up and that exits just before the process costs whoever reaps the process
 * milliseconds of kernel time (the dentries are invalidated while still being freed). */
#ifndef D9_CORE_OWN_THREAD_NAME_H
#define D9_CORE_OWN_THREAD_NAME_H

#include <sys/prctl.h>

/* The heap sampler leaves the recorder's threads alone (sources/heap_sampler.c): their
 * allocations are the recorder's own, not the program's. */
void d9_heap_exclude_thread(void);

static inline void d9_name_own_thread(const char *name) {
    d9_heap_exclude_thread();
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

#endif
