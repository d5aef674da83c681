/* Why a thread was off-CPU, read from the switch record and the stack taken when it switched
 * out: the cause half of the per-poll attribution (model/attribution.h). Heuristics on
 * symbol names, kept in one place for every reader. */
#ifndef D9_MODEL_OFFCPU_CAUSE_H
#define D9_MODEL_OFFCPU_CAUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/attribution.h"

/* A function that waits for a lock (pthread_mutex_lock, __lll_lock_wait, rwlocks, C11 mtx,
 * stdio's flockfile): an off-CPU stack through it is lock contention. Compiler clone
 * suffixes (".isra.0") are ignored. */
bool d9m_is_lock_frame(const char *symbol);

/* The part an off-CPU interval belongs to. `preempted` (the switch record's flag: the thread
 * was still runnable) gives D9M_PART_RUNNABLE whatever the stack. Otherwise the stack decides,
 * `symbols[0..n)` leaf first (NULL entries: frames without a symbol), the first rule that
 * matches anywhere in it: a lock frame -> LOCK; a sleep (nanosleep, clock_nanosleep, their
 * kernel handlers) -> SLEEP; a page fault handler -> FAULT; a system call (its kernel entry or
 * handler) -> IO; anything else, or no stack -> BLOCKED_OTHER. */
d9m_part d9m_offcpu_cause(bool preempted, const char *const *symbols, size_t n);

#endif
