/* The task record the executor keeps for each spawned task (private to the executor). */
#ifndef EX_TASK_H
#define EX_TASK_H

#include <stdatomic.h>
#include <stdint.h>

#include "executor.h"

/* Scheduling state. A task is in at most one run queue, and polled by one worker at a time:
 *
 *   IDLE ──wake──▶ SCHEDULED ──a worker pops it──▶ RUNNING ──EX_PENDING──▶ IDLE
 *                      ▲                              │
 *                      │                  wake during │ the poll
 *                      │                              ▼
 *                      └───────── EX_PENDING ────── NOTIFIED
 *
 *   RUNNING or NOTIFIED ──EX_READY──▶ DONE (later wakes are ignored)
 */
enum ex_sched_state { EX_IDLE, EX_SCHEDULED, EX_RUNNING, EX_NOTIFIED, EX_DONE };

struct ex_task {
    uint64_t id;              /* the identity dial9 records: unique, never 0 */
    ex_poll_fn poll;
    void *data;
    const d9_loc *spawned_at; /* recorded with the spawn and with every poll */
    ex_executor *ex;
    _Atomic int sched;        /* enum ex_sched_state */
    _Atomic uint32_t refs;    /* 1 while not DONE, plus one per outstanding waker */
    _Atomic uint32_t home;    /* the worker that polled it last: external wakes queue it there */
    ex_task *next;            /* run-queue link, guarded by that queue's worker lock */
};

#endif
