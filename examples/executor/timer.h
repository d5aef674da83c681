/* A timer thread: "send on this channel in N microseconds". Its wakes come from a thread that
 * is not a worker, as a runtime's timer driver or I/O reactor would. */
#ifndef EX_TIMER_H
#define EX_TIMER_H

#include <stdint.h>

#include "oneshot.h"

typedef struct ex_timer ex_timer;

/* Start the timer thread. NULL on failure (errno set). */
ex_timer *ex_timer_start(void);

/* Send 1 on `done` once `delay_us` microseconds have passed. Returns 0, -1 when out of
 * memory (then `done` is sent at once, so the waiting task is never stranded). */
int ex_timer_after(ex_timer *tm, uint64_t delay_us, ex_oneshot *done);

/* Fire every pending timer now, stop the thread and free the timer. Call it only when no
 * task can call ex_timer_after any more (the executor is idle): the timer is freed here. */
void ex_timer_stop(ex_timer *tm);

#endif
