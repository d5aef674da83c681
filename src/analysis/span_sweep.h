/* The sweep's side of the span model (span_stats.h), inline: a record the model takes is handed
 * on where the sweep handles its kind (sweep.c), at the cost of the model's own call, without a
 * call into span_stats.c per poll, wake and mark. Late records are not handed on: the model
 * needs the time order. */
#ifndef D9_ANALYSIS_SPAN_SWEEP_H
#define D9_ANALYSIS_SPAN_SWEEP_H

#include "analysis/internal.h"

/* Task t's state in the model, made at its first need. */
static inline d9m_span_task *d9a_span_task_of(d9a_analysis *a, task *t) {
    if (!t->span && !(t->span = d9m_spans_task_new(a->spans.model, t->id))) a->spans.failed = true;
    return t->span;
}

/* The state of task `id` (0: none), its sweep's task made if it has none yet. */
static inline d9m_span_task *d9a_span_task(d9a_analysis *a, uint64_t id) {
    task *t = id ? d9a_task(a, id, true) : NULL;
    return t ? d9a_span_task_of(a, t) : NULL;
}

/* Before the sweep's own step, which takes the task found here (NULL: none, for id 0). The
 * model takes the poll from d9a_spans_poll_feed, once the sweep has its gaps. */
static inline task *d9a_spans_poll(d9a_analysis *a, const d9a_rec *r) {
    task *t = r->id ? d9a_task(a, r->id, true) : NULL;
    a->spans.polled = t ? d9a_span_task_of(a, t) : NULL;
    return t;
}

/* The poll d9a_spans_poll found, with its attribution's gaps (p; NULL: none): one call; its
 * state's generation into *gen. */
static inline void d9a_spans_poll_feed(d9a_analysis *a, const d9a_rec *r, const d9m_attr_poll *p, uint32_t *gen) {
    if (d9m_spans_task_poll_attr(a->spans.model, a->spans.polled, r->ts, r->ts + r->dur, p, gen) != 0)
        a->spans.failed = true;
}

/* A wake of task t (NULL: of no task, which only moves the model's clock). */
static inline void d9a_spans_wake(d9a_analysis *a, task *t, const d9a_rec *r) {
    if (d9m_spans_task_wake(a->spans.model, t ? d9a_span_task_of(a, t) : NULL, r->ts) != 0) a->spans.failed = true;
}

/* A span mark (span_marks.h). */
static inline void d9a_spans_mark(d9a_analysis *a, const d9a_span_mark *mk) {
    d9m_spans *m = a->spans.model;
    d9m_span_task *t = d9a_span_task(a, mk->task);
    int rc = mk->begin ? d9m_spans_task_begin(m, mk->ts, mk->name, mk->span_id, mk->task, t, mk->worker, 0)
                       : d9m_spans_task_end(m, mk->ts, mk->name, mk->span_id, mk->task, t, mk->worker, 0);
    if (rc != 0) a->spans.failed = true;
}

#endif
