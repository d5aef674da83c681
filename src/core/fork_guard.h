/* The core around fork() (fork_guard.c): its registries' locks are held across it, and the
 * child forgets the recorder's state (it has the parent's memory, not its threads). */
#ifndef D9_CORE_FORK_GUARD_H
#define D9_CORE_FORK_GUARD_H

/* Register the guard (once; a constructor does it at load). Called by d9_start and
 * d9_worker_begin too: in a static link, their reference is what keeps fork_guard.o, and with
 * it the constructor. */
void d9_fork_guard_install(void);

/* In the child: stop recording and drop the recorder's threads, buffers and locks without
 * touching them (recorder.c). */
void d9_recorder_forget_after_fork(void);

#endif
