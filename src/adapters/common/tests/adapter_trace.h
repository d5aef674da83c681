/* Test helper: read a run's trace files back with the C decoder and rebuild what the loop
 * adapter tests check: polls (PollStart paired with the next PollEnd of the same worker),
 * spawns, terminates, wakes, park/unpark pairs and workers. Also counts protocol errors: a
 * PollStart while a poll is open, a PollEnd or an unpark without its start. */
#ifndef D9_ADAPTER_TRACE_H
#define D9_ADAPTER_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define AT_LOC_LEN 128

typedef struct at_poll {
    uint64_t task;
    uint32_t worker;
    char loc[AT_LOC_LEN];
    uint64_t start_ns, end_ns;
} at_poll;

typedef struct at_task_event {
    uint64_t task;
    char loc[AT_LOC_LEN]; /* spawns only */
    uint64_t ts_ns;
} at_task_event;

typedef struct at_wake {
    uint64_t waker, woken;
    uint32_t worker; /* the worker the wake came from (255: not a worker) */
    uint64_t ts_ns;
} at_wake;

typedef struct at_park {
    uint32_t worker;
    uint32_t tid;
    uint64_t park_ns, unpark_ns;
} at_park;

typedef struct at_worker {
    uint32_t id, tid, index;
    char runtime[AT_LOC_LEN];
} at_worker;

typedef struct at_trace {
    at_poll *polls;
    size_t npolls;
    at_task_event *spawns, *terminates;
    size_t nspawns, nterminates;
    at_wake *wakes;
    size_t nwakes;
    at_park *parks;
    size_t nparks;
    at_worker *workers;
    size_t nworkers;
    size_t nesting_errors; /* PollStart inside an open poll, PollEnd without a PollStart */
    size_t park_errors;    /* park inside a park, unpark without a park, park during a poll */
    size_t open_polls;     /* polls never ended */
    size_t events;
} at_trace;

/* Load every trace.*.bin of `run_dir`. 0, or -1 with a message on stderr. */
int at_load(const char *run_dir, at_trace *t);
void at_free(at_trace *t);

/* Polls whose location is `loc` (NULL: any) and task `task` (0: any). */
size_t at_polls(const at_trace *t, const char *loc, uint64_t task);
/* Polls of `loc` that ran on a worker of runtime `runtime`. */
size_t at_polls_on_runtime(const at_trace *t, const char *loc, const char *runtime);
/* Distinct task ids among the polls of `loc`. */
size_t at_distinct_tasks(const at_trace *t, const char *loc);
size_t at_spawns(const at_trace *t, uint64_t task, const char *loc /* NULL: any */);
size_t at_terminates(const at_trace *t, uint64_t task);
size_t at_wakes_of(const at_trace *t, uint64_t woken);
const at_worker *at_worker_by_id(const at_trace *t, uint32_t id);
/* Parks recorded by the workers of `runtime`. */
size_t at_parks_on_runtime(const at_trace *t, const char *runtime);

/* A fresh directory under $TMPDIR (or /tmp) for a test's traces; the caller frees it. */
char *at_mkdtemp(const char *tag);

/* Remove `dir` and everything in it (a passing test cleans up; a failing one keeps its
 * traces for a look). */
void at_remove_tree(const char *dir);

#endif
