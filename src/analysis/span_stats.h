/* Spans in the analysis: the span model (model/spans.h) fed from the sweep's time-ordered
 * records, its spans summed by name for the report. The model is made at the first span event
 * ingested, so a trace without spans costs nothing; the reordering window holds the polls
 * before it, so the first spans' tasks are known. */
#ifndef D9_ANALYSIS_SPAN_STATS_H
#define D9_ANALYSIS_SPAN_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/hist.h"
#include "common/u64_map.h"
#include "model/spans.h"

typedef struct d9a_span_name_stats {
    uint32_t name; /* string id */
    uint64_t count, unended, cross_worker;
    d9a_hist elapsed;
    uint64_t poll_ns, queued_ns, wait_ns, unknown_ns;
    d9m_parts poll_parts; /* poll_ns by cause (blocked stacks as blocked_other until the report) */
} d9a_span_name_stats;

typedef struct d9a_span_stats {
    d9m_spans *model;          /* NULL until the first span event */
    d9m_span_task *polled;     /* the state of the poll handed on last (NULL: no task) */
    d9_u64_map by_name;        /* string id -> index into names */
    d9a_span_name_stats *names;
    size_t nnames, cap;
    d9_u64_map stacks;         /* name index << 32 | stack -> blocked ns in the spans' polls */
    uint32_t last_name;        /* the name of the span reported last, and its index (+1; 0 none):
                                  spans of one name often end one after the other */
    size_t last_index;
    bool failed;
} d9a_span_stats;

struct d9a_analysis;
struct d9a_rec;
struct d9a_report;

/* Ingest saw a span event: make the model. 0, or -1 when out of memory. */
int d9a_spans_start(struct d9a_analysis *a);
/* The sweep's records the model takes, each where the sweep handles its kind, in time order
 * (late ones are not handed on: the model needs the order): a poll (before the sweep's own
 * step), a wake, a span mark (span_marks.h, in step with the records): inline, in span_sweep.h,
 * each with its task's state in the model, held by the sweep's task (the model keeps no table
 * of its own); a task's release hands its state back (d9m_spans_task_terminate). */
/* The per-poll attribution handed on to the model (attribution_sweep.h): the gaps of the poll
 * worker `w` begins (d9m_spans_poll_gaps, inline there), an off-CPU interval inside it (its
 * stack or D9A_NO_ID). */
struct worker;
void d9a_spans_poll_off(struct d9a_analysis *a, const struct worker *w, const struct d9a_rec *r, bool preempted,
                        uint32_t stack);
/* The analyzed time ended at end_ns: unended spans counted, the report's section built.
 * 0, or -1 when out of memory. */
int d9a_spans_report(struct d9a_analysis *a, struct d9a_report *r, uint64_t end_ns);
void d9a_span_stats_free(d9a_span_stats *s);

#endif
