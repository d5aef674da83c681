/* Reading meaning into symbolized frames: which kernel frames are the scheduler's own (so the
 * "blocking function" of an off-CPU stack is the first frame past them), which mean the thread
 * was preempted rather than blocked, and which user-space frame is the application's (not
 * libc, not the runtime, not a dependency). Heuristics, kept in one place. */
#ifndef D9_ANALYSIS_FRAME_CLASS_H
#define D9_ANALYSIS_FRAME_CLASS_H

#include <stdbool.h>

#include "analysis/symtab.h"

/* __schedule, schedule_timeout, __wait_for_common, futex_wait_queue, ...: how every off-CPU
 * stack starts, whatever made the thread wait. */
bool d9a_is_scheduler_frame(const char *symbol);

/* exit_to_user_mode_loop, preempt_schedule_irq, __cond_resched, ...: the thread gave up the CPU
 * because another thread was to run (CPU contention), not because it waited for something. */
bool d9a_is_preemption_frame(const char *symbol);

/* A function that waits for a lock (pthread_mutex_lock, __lll_lock_wait, rwlocks): an
 * off-CPU stack through it is lock contention. */
bool d9a_is_lock_frame(const char *symbol);

/* A user-space frame of the application itself. */
bool d9a_is_app_frame(const d9a_frame *f);

/* The last path component of `path` (the whole string when it has no '/'). */
const char *d9a_basename(const char *path);

#endif
