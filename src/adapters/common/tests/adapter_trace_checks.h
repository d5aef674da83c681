/* The checks every loop adapter test makes on its trace, as inline functions so that they count
 * in the including test's CHECK counters (tests/check.h keeps them per translation unit). */
#ifndef D9_ADAPTER_TRACE_CHECKS_H
#define D9_ADAPTER_TRACE_CHECKS_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "adapter_trace.h"
#include "check.h"
#include "dial9_required_fields.h"

/* Load the run, check the fields dial9 requires and the poll and park protocol, and find the
 * loop's worker: registered for `runtime` as index 0 by thread `tid`. NULL (after a failed
 * check) when it is missing. */
static inline const at_worker *at_check_run(at_trace *t, const char *run_dir, const char *runtime, pid_t tid) {
    d9f_check_run(run_dir, runtime); /* every field dial9 requires (tests/dial9_required_fields.h) */
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

/* The one task spawned for the object at `obj` (its TaskObjectEvent); 0 after a failed check
 * when it had none or several. */
static inline uint64_t at_task(const at_trace *t, const void *obj) {
    uint64_t task;
    size_t n = at_tasks_of(t, obj, &task);
    if (n != 1) fprintf(stderr, "object %p: %zu tasks spawned\n", obj, n);
    CHECK_EQ_U64(n, 1);
    return n == 1 ? task : 0;
}

/* Every run: no task id spawned twice, every poll's task spawned before it, no poll after its
 * task's terminate, no task terminated twice. */
static inline void at_check_task_identity(const at_trace *t) {
    at_identity id;
    at_identity_check(t, &id);
    CHECK(id.spawns > 0);
    CHECK_EQ_U64(id.distinct_spawned, id.spawns);
    CHECK_EQ_U64(id.polls_without_spawn, 0);
    CHECK_EQ_U64(id.polls_after_terminate, 0);
    CHECK_EQ_U64(id.terminates_repeated, 0);
}

/* Wakes name their real waker (fewer than 10 % name the woken task itself), and every poll of
 * an I/O callback at `io_locs` follows a wake of its task in the same round of the loop. */
static inline void at_check_wakes(const at_trace *t, const char *const *io_locs, size_t nlocs) {
    at_wake_stats ws;
    at_wake_check(t, io_locs, nlocs, &ws);
    if (ws.self_wakes * 10 >= ws.wakes || ws.io_polls_unwoken)
        fprintf(stderr, "wakes %zu, waker = woken %zu; I/O polls %zu, without a wake %zu\n",
                ws.wakes, ws.self_wakes, ws.io_polls, ws.io_polls_unwoken);
    CHECK(ws.wakes > 0);
    CHECK(ws.self_wakes * 10 < ws.wakes);
    CHECK(ws.io_polls > 0);
    CHECK_EQ_U64(ws.io_polls_unwoken, 0);
}

/* As many polls at `loc` as the callback ran, all of them for `obj`'s task, on `runtime`. */
static inline void at_check_polls(const at_trace *t, const char *loc, const void *obj, long want,
                                  const char *runtime) {
    CHECK(obj != NULL);
    uint64_t task = at_task(t, obj);
    if (!task) return;
    size_t got = at_polls(t, loc, task);
    if (got != (size_t)want) fprintf(stderr, "polls of %s: %zu, callbacks: %ld\n", loc, got, want);
    CHECK_EQ_U64(got, want);
    CHECK_EQ_U64(at_polls(t, loc, 0), want); /* no poll of this callback for another task */
    CHECK_EQ_U64(at_polls_on_runtime(t, loc, runtime), want);
}

/* Task `task` spawned once, at `loc`, and terminated once (task 0: a failed at_task). */
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

/* `want` wakes of `woken`, all from a thread that is not a worker and runs no task. */
static inline void at_check_outside_wakes(const at_trace *t, uint64_t woken, size_t want) {
    CHECK(woken != 0);
    CHECK_EQ_U64(at_wakes_of(t, woken), want);
    for (size_t i = 0; i < t->nwakes; i++)
        if (t->wakes[i].woken == woken) CHECK(t->wakes[i].worker == 255 && t->wakes[i].waker == 0);
}

#endif
