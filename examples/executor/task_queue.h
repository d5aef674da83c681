/* A FIFO of tasks linked through the tasks themselves (no allocation to enqueue).
 * Not thread-safe: each worker guards its queue with its own mutex. A production runtime
 * would use a lock-free work-stealing deque here; a mutex keeps the example easy to follow
 * and does not change where the dial9 hooks go. */
#ifndef EX_TASK_QUEUE_H
#define EX_TASK_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "task.h"

typedef struct ex_task_queue {
    ex_task *head, *tail;
    uint32_t len;
} ex_task_queue;

static inline void ex_queue_push(ex_task_queue *q, ex_task *t) {
    t->next = NULL;
    if (q->tail) q->tail->next = t;
    else q->head = t;
    q->tail = t;
    q->len++;
}

static inline ex_task *ex_queue_pop(ex_task_queue *q) {
    ex_task *t = q->head;
    if (!t) return NULL;
    q->head = t->next;
    if (!q->head) q->tail = NULL;
    t->next = NULL;
    q->len--;
    return t;
}

/* Move the oldest `n` tasks of `from` to the end of `to`. */
static inline void ex_queue_move(ex_task_queue *from, ex_task_queue *to, uint32_t n) {
    while (n-- > 0) {
        ex_task *t = ex_queue_pop(from);
        if (!t) return;
        ex_queue_push(to, t);
    }
}

#endif
