/* The sweep's side of the span model (span_stats.h), inline: a record the model takes is handed
 * on where the sweep handles its kind (sweep.c), at the cost of the model's own call, without a
 * call into span_stats.c per poll, wake and mark. Late records are not handed on: the model
 * needs the time order. */
#ifndef D9_ANALYSIS_SPAN_SWEEP_H
#define D9_ANALYSIS_SPAN_SWEEP_H

#include "analysis/internal.h"

static inline void d9a_spans_poll(d9a_analysis *a, const d9a_rec *r) {
    if (d9m_spans_poll(a->spans.model, r->id, r->ts, r->ts + r->dur) != 0) a->spans.failed = true;
}

static inline void d9a_spans_wake(d9a_analysis *a, const d9a_rec *r) {
    if (d9m_spans_wake(a->spans.model, r->id, r->ts) != 0) a->spans.failed = true;
}

static inline void d9a_spans_terminate(d9a_analysis *a, const d9a_rec *r) {
    if (d9m_spans_terminate(a->spans.model, r->id) != 0) a->spans.failed = true;
}

/* A span mark: D9A_REC_QUEUE with aux D9A_SPAN_BEGIN / D9A_SPAN_END (records.h). */
static inline void d9a_spans_mark(d9a_analysis *a, const d9a_rec *r) {
    d9m_spans *m = a->spans.model;
    int rc = r->aux == D9A_SPAN_BEGIN ? d9m_spans_begin(m, r->ts, r->ref, r->id, r->dur, r->worker, 0)
             : r->aux == D9A_SPAN_END ? d9m_spans_end(m, r->ts, r->ref, r->id, r->dur, r->worker, 0)
                                      : 0;
    if (rc != 0) a->spans.failed = true;
}

#endif
