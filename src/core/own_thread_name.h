/* The recorder's threads name themselves (prctl on the calling thread). Naming one from
 * another thread writes /proc/self/task/TID/comm, and a thread whose /proc entries were
 * looked up and that exits just before the process costs whoever reaps the process
 * milliseconds of kernel time (the dentries are invalidated while still being freed). */
#ifndef D9_CORE_OWN_THREAD_NAME_H
#define D9_CORE_OWN_THREAD_NAME_H

#include <sys/prctl.h>

static inline void d9_name_own_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }

#endif
