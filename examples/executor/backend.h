/* A simulated database: its own thread answers the queries queued since its last round,
 * every `round_us` microseconds, and wakes each asking task through its reply channel. */
#ifndef EX_BACKEND_H
#define EX_BACKEND_H

#include <stdint.h>

#include "oneshot.h"

typedef struct ex_backend ex_backend;

/* Start the backend thread. NULL on failure (errno set). */
ex_backend *ex_backend_start(uint32_t round_us);

/* Queue a query for `key`; the answer is sent on `reply`. Returns 0, or -1 when out of
 * memory (then `reply` gets an answer at once). */
int ex_backend_query(ex_backend *db, uint64_t key, ex_oneshot *reply);

/* Answer what is queued, stop the thread and free the backend. Call it only when no task can
 * call ex_backend_query any more (the executor is idle): the backend is freed here. */
void ex_backend_stop(ex_backend *db);

#endif
