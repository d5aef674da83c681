/* A small work-stealing task executor, instrumented with the dial9 hooks.
 *
 * Tasks are explicit state machines: a poll function that does some work and returns
 * EX_READY (finished) or EX_PENDING (waiting for something; a waker will reschedule it).
 * Each worker thread has its own run queue; idle workers steal from busy ones and park on a
 * condition variable when there is nothing to do anywhere.
 *
 * Where the dial9 hooks go (the point of this example) — see executor.c:
 *   worker thread starts / stops     d9_worker_begin / d9_worker_end
 *   a task is created / finishes     d9_task_spawn / d9_task_terminate
 *   one run of a task                d9_poll_begin ... d9_poll_end (after d9_set_local_queue)
 *   a worker blocks for work         d9_park ... d9_unpark around the condition-variable wait
 *   a task is made runnable          d9_wake, on the thread that wakes it
 */
#ifndef EX_EXECUTOR_H
#define EX_EXECUTOR_H

#include <stdbool.h>
#include <stdint.h>

#include <dial9/dial9.h>

typedef struct ex_executor ex_executor;
typedef struct ex_task ex_task;

typedef enum ex_poll_result { EX_PENDING = 0, EX_READY = 1 } ex_poll_result;

/* Run the task once. `data` is what was passed to ex_spawn; the poll function owns it and
 * frees it before returning EX_READY. */
typedef ex_poll_result (*ex_poll_fn)(ex_task *self, void *data);

/* A reference to a task that can make it runnable again, from any thread. Holding a waker
 * keeps the task's memory alive (not its data); each waker is used (ex_wake) or dropped
 * (ex_waker_drop) exactly once. */
typedef struct ex_waker {
    ex_task *task;
} ex_waker;

typedef struct ex_executor_stats {
    uint64_t spawned, completed;
    uint64_t polls;
    uint64_t stolen;   /* tasks taken from another worker's queue */
    uint64_t parks;    /* times a worker blocked waiting for work */
    uint64_t wakes;    /* ex_wake calls */
} ex_executor_stats;

/* Start `workers` worker threads. NULL on failure (errno set). */
ex_executor *ex_executor_start(uint32_t workers);

/* Let the workers finish every queued task, stop them and free the executor. Call once no
 * task is waiting any more (see ex_executor_wait_idle); fills `stats` if not NULL. */
void ex_executor_stop(ex_executor *ex, ex_executor_stats *stats);

/* Wait until every spawned task has finished, at most `timeout_ms`. True when idle. */
bool ex_executor_wait_idle(ex_executor *ex, uint32_t timeout_ms);

/* Create a task and queue it for its first poll; callable from any thread. `where` names
 * the spawn site in the trace (use the ex_spawn macro to get the caller's file:line).
 * Returns the task's id (nonzero), or 0 when out of memory. */
uint64_t ex_spawn_at(ex_executor *ex, ex_poll_fn poll, void *data, const d9_loc *where);
#define ex_spawn(ex, poll, data) ex_spawn_at((ex), (poll), (data), D9_HERE)

/* Inside a poll: the executor running this task, and the task's id. */
ex_executor *ex_task_executor(const ex_task *self);
uint64_t ex_task_id(const ex_task *self);

/* Inside a poll: a waker for this task (to hand to whatever will complete its wait). */
ex_waker ex_task_waker(ex_task *self);

/* Make the waker's task runnable (now, or right after its current poll) and release it. */
void ex_wake(ex_waker waker);

/* Release a waker without waking its task. */
void ex_waker_drop(ex_waker waker);

/* Inside a poll: let other tasks run, then poll this one again (return EX_PENDING after). */
void ex_yield(ex_task *self);

#endif
