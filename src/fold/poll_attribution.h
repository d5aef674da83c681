/* polls' attribution columns (docs/fleet-tables.md): where each poll's time went, by the
 * model's one definition (model/attribution.h), fed from fold's one pass over a segment. The
 * pass hands over the switch records, the context-switch samples and the coverage as they
 * come; after it, the switch records are paired into off-CPU intervals, each interval is given
 * its sample by the model's rule (model/switch_stack_match.h) and its cause by the model's
 * (model/offcpu_cause.h), and each poll's parts are the model's arithmetic over the intervals
 * of its worker that start inside it, as in the export and analyze. The causes wait for the
 * segment's end: the symbols that name a stack's frames come last. */
#ifndef D9_FOLD_POLL_ATTRIBUTION_H
#define D9_FOLD_POLL_ATTRIBUTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/u64_map.h"
#include "model/attribution.h"

typedef struct d9f_switch d9f_switch;
typedef struct d9f_offcpu_sample d9f_offcpu_sample;
typedef struct d9f_interval d9f_interval;

typedef struct d9f_tid_last {
    uint64_t tid1; /* tid + 1, 0: empty */
    uint64_t last;
} d9f_tid_last;

typedef struct d9f_attr {
    d9m_coverage cov;
    d9f_switch *sw;
    size_t nsw, sw_cap;
    d9f_offcpu_sample *samples;
    size_t nsamples, samples_cap;
    d9f_interval *iv; /* after d9f_attr_prepare: sorted by (worker, switch-out) */
    size_t niv, iv_cap;
    d9_u64_map last_of_tid; /* a thread's last switch record (index in sw) */
    /* the latest threads' by the tid's low bits, before last_of_tid (written back to it when
     * another thread takes the slot): no hashing for a runtime's few threads */
    d9f_tid_last recent_tid[64];
    bool unordered;         /* a thread's records out of time order: sorted after the pass */
    bool covered; /* the trace has switch records to attribute from */
} d9f_attr;

/* During the pass. The adders return -1 when out of memory. */
int d9f_attr_switch(d9f_attr *a, uint64_t ts, uint64_t worker, uint64_t tid, bool out, bool preempted);
/* A context-switch sample of `worker` at ts whose stack is the caller's `stack` (an index). */
int d9f_attr_offcpu_sample(d9f_attr *a, uint64_t ts, uint64_t worker, uint32_t stack);

/* The cause of the caller's stack (model/offcpu_cause.h's d9m_offcpu_cause of its frames'
 * names), or -1 when out of memory. */
typedef int (*d9f_stack_cause_fn)(uint32_t stack, void *ctx);

/* After the pass: the intervals, their samples and causes. -1 when out of memory. */
int d9f_attr_prepare(d9f_attr *a, d9f_stack_cause_fn cause, void *ctx);

/* The parts of a poll of `worker` over [start, end): they add up to end - start. cpu_event:
 * what its PollCpuEvent said, or D9M_POLL_CPU_NONE when it had none (not the same as "not
 * exact": the model's rule, d9m_attr_poll_cpu, presumes a long poll without one ran all of
 * it); cpu_ns: its exact CPU time when it said so. *from is the caller's per worker,
 * D9F_ATTR_FROM_START before its first poll: where the search for the poll's first interval
 * and its coverage changes starts. With the worker's polls in order of start, each poll steps
 * on from the previous one's (no search per poll); a poll that starts earlier is searched for. */
typedef struct d9f_attr_from {
    size_t iv;          /* the worker's first interval at or after the previous poll's start */
    d9m_cov_cursor cov; /* the previous poll's coverage changes and drops */
} d9f_attr_from;
#define D9F_ATTR_FROM_START ((d9f_attr_from){.iv = SIZE_MAX})
void d9f_attr_poll(const d9f_attr *a, uint64_t worker, uint64_t start, uint64_t end, d9m_poll_cpu cpu_event,
                   uint64_t cpu_ns, d9f_attr_from *from, d9m_parts *out);

void d9f_attr_free(d9f_attr *a);

#endif
