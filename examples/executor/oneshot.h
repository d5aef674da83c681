/* A one-shot channel: one value, sent once from any thread, received by one task.
 * The only way tasks in this example wait for anything (a backend reply, a timer, a child
 * task): the receiving task polls the channel, which registers its waker; the sender stores
 * the value and wakes the task — a cross-thread or cross-task wake that dial9 records. */
#ifndef EX_ONESHOT_H
#define EX_ONESHOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "executor.h"

typedef struct ex_oneshot {
    _Atomic int state;  /* EMPTY → WAITING (a waker is registered) → FULL, or EMPTY → FULL */
    uint64_t value;     /* written by the sender before FULL, read by the receiver after */
    ex_waker waiter;    /* written by the receiver before WAITING, taken by the sender */
} ex_oneshot;

void ex_oneshot_init(ex_oneshot *ch);

/* Inside a poll of `self`, the receiver: true and *value when the value has arrived;
 * otherwise arranges for `self` to be woken when it does and returns false. */
bool ex_oneshot_poll(ex_oneshot *ch, ex_task *self, uint64_t *value);

/* Send `value` and wake the receiver if it waits. The channel may be freed by the receiver
 * as soon as this starts, so the caller must not touch `ch` afterwards. */
void ex_oneshot_send(ex_oneshot *ch, uint64_t value);

#endif
