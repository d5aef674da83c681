/* Test helper: read a run's trace files back with the C decoder and rebuild what the loop
 * adapter tests check: polls (PollStart paired with the next PollEnd of the same worker),
 * spawns, terminates, wakes, park/unpark pairs and workers. Also counts protocol errors: a
 * PollStart while a poll is open, a PollEnd or an unpark without its start. */
#ifndef D9_ADAPTER_TRACE_H
#define D9_ADAPTER_TRACE_H

#include <stdbool.h>
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
    uint64_t object;      /* spawns only: the TaskObjectEvent's object (0: none) */
    uint64_t ts_ns;
} at_task_event;

typedef struct at_wake {
    uint64_t waker, woken; /* waker 0: the poller, a timer or a thread running no task */
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
    uint64_t dropped;      /* events lost (sum of DroppedEventsEvent counts) */
} at_trace;

/* Load every trace.*.bin of `run_dir`. 0, or -1 with a message on stderr. */
int at_load(const char *run_dir, at_trace *t);
void at_free(at_trace *t);

/* Polls whose location is `loc` (NULL: any) and task `task` (0: any). */
size_t at_polls(const at_trace *t, const char *loc, uint64_t task);
/* The locations of the first and the last poll (by start) of worker `worker`; false when it
 * has none. */
bool at_first_last_polls(const at_trace *t, uint32_t worker, const char **first, const char **last);
/* Polls of `loc` that ran on a worker of runtime `runtime`. */
size_t at_polls_on_runtime(const at_trace *t, const char *loc, const char *runtime);
/* Distinct task ids among the polls of `loc`. */
size_t at_distinct_tasks(const at_trace *t, const char *loc);
size_t at_spawns(const at_trace *t, uint64_t task, const char *loc /* NULL: any */);
size_t at_terminates(const at_trace *t, uint64_t task);
size_t at_wakes_of(const at_trace *t, uint64_t woken);
/* Tasks spawned for the object at address `obj` (TaskObjectEvent); *last (may be NULL) gets the
 * last one's id (0 when none). */
size_t at_tasks_of(const at_trace *t, const void *obj, uint64_t *last);
const at_worker *at_worker_by_id(const at_trace *t, uint32_t id);
/* Parks recorded by the workers of `runtime`. */
size_t at_parks_on_runtime(const at_trace *t, const char *runtime);

/* Task identity: what every reader of a run relies on (a task lives from its first spawn to
 * its first terminate). */
typedef struct at_identity {
    size_t spawns;               /* TaskSpawnEvents */
    size_t distinct_spawned;     /* distinct task ids among them (= spawns: no id reused) */
    size_t polls;
    size_t polls_without_spawn;  /* a poll whose task has no spawn at or before its start */
    size_t polls_after_terminate;/* a poll that ends after its task's terminate */
    size_t terminates_repeated;  /* a task terminated more than once */
} at_identity;
void at_identity_check(const at_trace *t, at_identity *out);

/* Wakes: how many name the woken task as its own waker, and whether the polls of the callbacks
 * at `io_locs` (I/O callbacks) each follow a wake of their task, at or before the poll's
 * start and not before the worker's last park (the wake of this round of the loop). */
typedef struct at_wake_stats {
    size_t wakes, self_wakes;    /* waker == woken */
    size_t io_polls, io_polls_unwoken;
} at_wake_stats;
void at_wake_check(const at_trace *t, const char *const *io_locs, size_t nlocs, at_wake_stats *out);

/* A fresh directory under $TMPDIR (or /tmp) for a test's traces; the caller frees it. */
char *at_mkdtemp(const char *tag);

/* Remove `dir` and everything in it (a passing test cleans up; a failing one keeps its
 * traces for a look). */
void at_remove_tree(const char *dir);

#endif
