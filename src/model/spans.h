/* Spans (d9_span_begin / d9_span_end), written once for every reader of the trace model:
 * which begin an end closes, and where a span's elapsed time went.
 *
 * Pairing: an end closes the open span of the same name and id (the user's request id), on
 * any thread: a request may begin in one callback and end in another worker's. A second begin
 * of an open (name, id) leaves the first unended; an end with nothing open is a stray end.
 *
 * The split of a span [begin, end) over its tasks (the task being polled where it began and
 * where it ended, when any): at each instant the first of these that holds for one of them
 *   poll    a poll of the task runs;
 *   queued  the task was woken and waits for its poll (wake -> poll, model/wake_link.h);
 *   wait    the task waits for a wake: after its poll ended, before the next wake (async wait:
 *           the network, a timer, another thread's work);
 *   unknown none of them is known (no task, a task not polled since the trace began).
 * Exact integer ns: poll + queued + wait + unknown == elapsed.
 *
 * The in-poll part (the union of the tasks' polls inside the span) is split further by
 * the per-poll attribution (model/attribution.h) of the polls inside it, d9m_span.poll_parts:
 * at each instant of the in-poll part, the poll of the task the span began in (else the one it
 * ended in) is in a gap of the switch records (unknown), off-CPU in an interval of the thread
 * polling it (its cause, or its stack for the reader to classify: blocked_other until then), or
 * on CPU. The reader feeds each poll's gaps and the off-CPU intervals of the thread inside it
 * (d9m_spans_poll_gap, d9m_spans_poll_off) as the per-poll attribution counts them; a reader
 * that feeds none gets its polls all on CPU, so it reads poll_parts only if it feeds them.
 *
 * Drops: when the reader gives the trace's coverage (d9m_spans_set_coverage), a
 * DroppedEventsEvent inside a span's window (any thread: a lost wake of its task is as bad as
 * a lost poll) makes the span unknown from its begin to the last such drop; its parts count
 * from there.
 *
 * Input in time order (the analysis's sweep, the export's sorted events): a poll whole, at its
 * start; a wake of a task before a poll of the same timestamp; a span mark after the polls of
 * its timestamp. Memory: per live task, and the tasks' polls (one record each: the wait, queue
 * and poll before it) since the oldest open span began, never the whole trace (those older are
 * dropped when the task's array is full, not at every poll; a forgotten task's state, with its
 * arrays, is reused by the next new task). Open spans are found by id in a direct-mapped table
 * (ids are most often sequential), a map behind it for ids that collide. Cost: a span is split in
 * one walk over its tasks' records read in place, in time order, from the first that reaches
 * into the span (found from the newest back by their running latest end), the in-poll part by
 * cause on the way from the tasks' gaps and off-CPU intervals (no copy, no sort). Side paths, exact: a task
 * whose polls overlap (a broken trace) is split by the union of the intervals, sorted; a task
 * whose gaps and off-CPU intervals came out of order or overlapping, by cause from a sorted
 * copy. Names are the reader's string ids. */
#ifndef D9_MODEL_SPANS_H
#define D9_MODEL_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/attribution.h"

#define D9M_SPAN_NO_STACK UINT32_MAX

typedef struct d9m_span_stack {
    uint32_t stack; /* the reader's stack id */
    uint64_t ns;    /* blocked time under it, inside the span's in-poll part */
} d9m_span_stack;

typedef struct d9m_span_parts {
    uint64_t poll_ns, queued_ns, wait_ns, unknown_ns;
} d9m_span_parts;

typedef struct d9m_span {
    uint32_t name;            /* the reader's string id */
    uint64_t id;              /* the user's id */
    uint64_t begin_ts, end_ts; /* end_ts: the trace's end when unended */
    uint64_t begin_task, end_task;     /* 0: outside any poll */
    uint64_t begin_worker, end_worker; /* as the trace says (255: not a worker) */
    uint64_t begin_tid, end_tid;
    bool ended;               /* false: still open when the trace ended */
    d9m_span_parts parts;
    /* parts.poll_ns by cause (sums to it exactly); blocked time under a stack is counted in
     * blocked_other and listed in poll_stacks (valid during the callback only) for the reader
     * to move to the stack's cause, as it does for a poll's */
    d9m_parts poll_parts;
    const d9m_span_stack *poll_stacks;
    size_t npoll_stacks;
} d9m_span;

/* Called once per span, when it ends (or at d9m_spans_finish for the unended ones). */
typedef void (*d9m_span_fn)(void *ctx, const d9m_span *s);

typedef struct d9m_spans d9m_spans;

/* NULL when out of memory. */
d9m_spans *d9m_spans_new(d9m_span_fn done, void *ctx);
void d9m_spans_free(d9m_spans *m);

/* The inputs, in time order (see above), by task id: the model then keeps a table of the
 * tasks by id (the export's model reads the marks apart from its polls). A terminated task is
 * still found by its id until it is forgotten (see d9m_spans_terminate). 0, or -1 when out of
 * memory. */
int d9m_spans_wake(d9m_spans *m, uint64_t task, uint64_t ts);
int d9m_spans_poll(d9m_spans *m, uint64_t task, uint64_t start, uint64_t end);
/* The per-poll attribution of the poll of `task` that started last: [from, to) of it is not
 * covered by switch records (model/attribution.h's gaps); the thread polling it was off-CPU
 * over [from, to) for `part` (RUNNABLE or BLOCKED_OTHER, with the switch-out's stack or
 * D9M_SPAN_NO_STACK), in time order; the stack of its latest off-CPU interval, matched after
 * it. 0, or -1 when out of memory. */
int d9m_spans_poll_gap(d9m_spans *m, uint64_t task, uint64_t from, uint64_t to);
/* All the gaps of the poll's attribution `p` at once (d9m_spans_poll_gap for each, one look-up
 * of the task: a governed recording has one for nearly every poll). */
int d9m_spans_poll_gaps(d9m_spans *m, uint64_t task, const d9m_attr_poll *p);
int d9m_spans_poll_off(d9m_spans *m, uint64_t task, uint64_t from, uint64_t to, d9m_part part,
                       uint32_t stack);
void d9m_spans_poll_off_stack(d9m_spans *m, uint64_t task, uint32_t stack);
/* The trace's coverage, for its drops (read at each span's report; NULL: none). */
void d9m_spans_set_coverage(d9m_spans *m, const d9m_coverage *c);
int d9m_spans_begin(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                    uint64_t worker, uint64_t tid);
int d9m_spans_end(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task,
                  uint64_t worker, uint64_t tid);
/* Task `task` terminated: its state is forgotten once no span is open (at once, or when the
 * last open span ends), so memory follows the live tasks. 0, or -1 when out of memory. */
int d9m_spans_terminate(d9m_spans *m, uint64_t task);
/* The trace ended at `end_ts`: every open span is reported unended (ended == false), its
 * elapsed time up to end_ts. 0, or -1 when out of memory. */
int d9m_spans_finish(d9m_spans *m, uint64_t end_ts);

/* The same inputs by the task's state, held by a reader that keeps its own table of tasks
 * (analyze's sweep looks every poll's, wake's and termination's task up anyway): the model then
 * keeps none, and a task costs it no look-up, insertion or removal. The reader makes a task's
 * state when the task first needs one (its first wake, poll or span mark), hands it with each of
 * the task's inputs, and drops it at the task's termination (d9m_spans_task_terminate: the model
 * keeps it while a span that may read it is open, then reuses it). A task id seen again after
 * its termination is a new task then (the id inputs continue the old one while it is kept).
 * task_id is the task's id, 0 for none (then t is NULL). Do not mix the two kinds of input in
 * one model. */
typedef struct d9m_span_task d9m_span_task;
/* NULL when out of memory. */
d9m_span_task *d9m_spans_task_new(d9m_spans *m, uint64_t task_id);
/* Bumped when the model reuses the state: a reader that keeps it past its task's termination
 * (the poll a worker is in) passes the value it had to the poll_off calls, which then ignore a
 * reused one. */
uint32_t d9m_span_task_gen(const d9m_span_task *t);
/* ts only moves the model's clock (a wake of no task): t may be NULL. */
int d9m_spans_task_wake(d9m_spans *m, d9m_span_task *t, uint64_t ts);
int d9m_spans_task_poll(d9m_spans *m, d9m_span_task *t, uint64_t start, uint64_t end);
int d9m_spans_task_poll_gaps(d9m_spans *m, d9m_span_task *t, const d9m_attr_poll *p);
/* d9m_spans_task_poll, then d9m_spans_task_poll_gaps of its attribution p (NULL: none), in one
 * call, for a reader that has the poll's gaps at its start (analyze's sweep): a governed poll,
 * one gap over all of it, is flagged as its record is made. *gen: d9m_span_task_gen(t) (0 for
 * no task), for the poll_off calls that follow. */
int d9m_spans_task_poll_attr(d9m_spans *m, d9m_span_task *t, uint64_t start, uint64_t end, const d9m_attr_poll *p,
                             uint32_t *gen);
int d9m_spans_task_poll_off(d9m_spans *m, d9m_span_task *t, uint32_t gen, uint64_t from, uint64_t to,
                            d9m_part part, uint32_t stack);
void d9m_spans_task_poll_off_stack(d9m_spans *m, d9m_span_task *t, uint32_t gen, uint32_t stack);
int d9m_spans_task_begin(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task_id,
                         d9m_span_task *t, uint64_t worker, uint64_t tid);
int d9m_spans_task_end(d9m_spans *m, uint64_t ts, uint32_t name, uint64_t id, uint64_t task_id,
                       d9m_span_task *t, uint64_t worker, uint64_t tid);
/* The reader's task terminated: the reader drops t. 0, or -1 when out of memory. */
int d9m_spans_task_terminate(d9m_spans *m, d9m_span_task *t);

/* Counts so far: ends that closed nothing, begins that reopened an open (name, id). */
uint64_t d9m_spans_stray_ends(const d9m_spans *m);
uint64_t d9m_spans_reopened(const d9m_spans *m);
/* Tasks whose state the model holds now, the readers' and terminated ones kept for open spans
 * (its memory follows them). */
size_t d9m_spans_tasks_held(const d9m_spans *m);

#endif
