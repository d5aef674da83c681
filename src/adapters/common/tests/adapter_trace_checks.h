/* The checks every loop adapter test makes on its trace, as inline functions so that they count
 * in the including test's CHECK counters (tests/check.h keeps them per translation unit). */
#ifndef D9_ADAPTER_TRACE_CHECKS_H
#define D9_ADAPTER_TRACE_CHECKS_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "adapter_trace.h"
#include "check.h"

/* Load the run, check the poll and park protocol, and find the loop's worker: registered for
 * `runtime` as index 0 by thread `tid`. NULL (after a failed check) when it is missing. */
static inline const at_worker *at_check_run(at_trace *t, const char *run_dir, const char *runtime, pid_t tid) {
    CHECK(at_load(run_dir, t) == 0);
    CHECK_EQ_U64(t->nesting_errors, 0);
    CHECK_EQ_U64(t->park_errors, 0);
    CHECK_EQ_U64(t->open_polls, 0);
    const at_worker *w = NULL;
    for (size_t i = 0; i < t->nworkers; i++)
        if (strcmp(t->workers[i].runtime, runtime) == 0) w = &t->workers[i];
    CHECK(w && w->tid == (uint32_t)tid && w->index == 0);
    return w;
}

/* As many polls at `loc` as the callback ran, all of them for `obj`'s task, on `runtime`. */
static inline void at_check_polls(const at_trace *t, const char *loc, const void *obj, long want,
                                  const char *runtime) {
    CHECK(obj != NULL);
    size_t got = at_polls(t, loc, (uintptr_t)obj);
    if (got != (size_t)want) fprintf(stderr, "polls of %s: %zu, callbacks: %ld\n", loc, got, want);
    CHECK_EQ_U64(got, want);
    CHECK_EQ_U64(at_polls(t, loc, 0), want); /* no poll of this callback for another task */
    CHECK_EQ_U64(at_polls_on_runtime(t, loc, runtime), want);
}

/* Task `task` spawned once, at `loc`, and terminated once. */
static inline void at_check_lifetime(const at_trace *t, uint64_t task, const char *loc) {
    CHECK_EQ_U64(at_spawns(t, task, loc), 1);
    CHECK_EQ_U64(at_terminates(t, task), 1);
}

/* The task polled at `loc` (the last one, if several); 0 after a failed check when none. */
static inline uint64_t at_task_polled_at(const at_trace *t, const char *loc) {
    uint64_t task = 0;
    for (size_t i = 0; i < t->npolls; i++)
        if (strcmp(t->polls[i].loc, loc) == 0) task = t->polls[i].task;
    CHECK(task != 0);
    return task;
}

/* `want` wakes of `woken`, all from a thread that is not a worker. */
static inline void at_check_outside_wakes(const at_trace *t, uint64_t woken, size_t want) {
    CHECK_EQ_U64(at_wakes_of(t, woken), want);
    for (size_t i = 0; i < t->nwakes; i++)
        if (t->wakes[i].woken == woken) CHECK(t->wakes[i].worker == 255);
}

#endif
