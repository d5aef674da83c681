/* Poll and park pairing, written once for every reader of the trace model (analysis/ and
 * export/): what a PollStartEvent, PollEndEvent, WorkerParkEvent or WorkerUnparkEvent says
 * (read through the schema bindings, format/dec_bindings.h), and the rule that pairs them.
 *
 * The rule follows dial9: per worker, a poll runs from a PollStartEvent to the next
 * PollEndEvent, a park from a WorkerParkEvent to the next WorkerUnparkEvent. A start that
 * meets another start before its end loses its end (D9M_PAIR_REOPENED); an end without a start
 * pairs with nothing (D9M_PAIR_STRAY_END). Marks must come in the worker's time order: the
 * analysis feeds them in stream order (one writer per worker), the export sorts them first.
 *
 * The state is a small struct per worker, kept by the reader next to its own per-worker data,
 * so pairing needs no memory beyond one open poll and one open park per worker. */
#ifndef D9_MODEL_PAIRING_H
#define D9_MODEL_PAIRING_H

#include <stdbool.h>
#include <stdint.h>

#include "format/decoder.h"
#include "model/schedstat_source.h"

typedef enum d9m_mark_kind { D9M_POLL_START, D9M_POLL_END, D9M_PARK, D9M_UNPARK } d9m_mark_kind;

/* One pairing event, its fields as the model uses them. */
typedef struct d9m_mark {
    uint64_t ts, worker_id;
    uint64_t task;           /* poll start: task_id (0 when absent) */
    uint64_t tid;            /* park, unpark: tid, 0 when absent */
    uint64_t cpu_ns;         /* park, unpark: cpu_time_ns, 0 when absent */
    uint64_t sched_wait_ns;  /* unpark: sched_wait_ns, 0 when absent */
    uint32_t queue;          /* poll start, park, unpark: local_queue (0 when absent; saturated) */
    uint32_t loc;            /* poll start: the reader's id of spawn_loc (it interns it) */
    uint32_t seq;            /* the reader's: the export's arrival order, to sort stably */
    uint8_t kind;            /* d9m_mark_kind */
    /* cpu_time_ns is there and nonzero: read at every park and unpark by ours and dial9's;
     * absent or 0 in our traces from before it was required, where schedstat was not read. */
    bool has_cpu;
    bool has_sched_wait_field; /* unpark: the schema has sched_wait_ns and it is present */
    /* unpark: a measured run-queue wait (d9m_sched_wait_measured): an unread one is no
     * measurement, not a zero delay */
    bool has_sched_wait;
} d9m_mark;

static inline uint64_t d9m_uint_or(const d9_event *ev, int index, uint64_t dflt) {
    uint64_t v;
    return index >= 0 && d9_value_uint(&ev->values[index], &v) ? v : dflt;
}

/* Fill *k from a pairing event (roles POLL_START, POLL_END, WORKER_PARK, WORKER_UNPARK);
 * false for any other event. `ss`: what the trace's metadata says of schedstat. k->loc is left 0 for the reader to set. Inline, as the pairing
 * below: it runs for most events of a trace, and the analysis reads them one by one. */
static inline bool d9m_mark_read(const d9_event *ev, d9m_schedstat ss, d9m_mark *k) {
    const d9_dec_binding *b = &ev->schema->bind;
    const int16_t *f = b->field;
    uint8_t kind;
    switch (b->role) {
    case D9_SCH_POLL_START: kind = D9M_POLL_START; break;
    case D9_SCH_POLL_END: kind = D9M_POLL_END; break;
    case D9_SCH_WORKER_PARK: kind = D9M_PARK; break;
    case D9_SCH_WORKER_UNPARK: kind = D9M_UNPARK; break;
    default: return false;
    }
    *k = (d9m_mark){.ts = ev->ts_ns, .kind = kind,
                    .worker_id = d9m_uint_or(ev, f[D9_KF_WORKER_ID], D9_WORKER_NONE)};
    if (kind == D9M_POLL_END) return true;
    uint64_t queue = d9m_uint_or(ev, f[D9_KF_LOCAL_QUEUE], 0);
    k->queue = queue > UINT32_MAX ? UINT32_MAX : (uint32_t)queue;
    if (kind == D9M_POLL_START) {
        k->task = d9m_uint_or(ev, f[D9_KF_TASK_ID], 0);
        return true;
    }
    k->tid = d9m_uint_or(ev, f[D9_KF_TID], 0);
    k->cpu_ns = d9m_uint_or(ev, f[D9_KF_CPU_TIME_NS], 0);
    k->has_cpu = k->cpu_ns != 0;
    if (kind == D9M_UNPARK && f[D9_KF_SCHED_WAIT_NS] >= 0 &&
        d9_value_uint(&ev->values[f[D9_KF_SCHED_WAIT_NS]], &k->sched_wait_ns)) {
        k->has_sched_wait_field = true;
        k->has_sched_wait = d9m_sched_wait_measured(ss, k->sched_wait_ns, k->has_cpu);
    }
    return true;
}

typedef struct d9m_pair_state {
    bool in_poll, parked;
    d9m_mark poll, park; /* the open start of each kind */
} d9m_pair_state;

typedef enum d9m_pair_result {
    D9M_PAIR_OPENED,    /* a start, nothing was open */
    D9M_PAIR_REOPENED,  /* a start while one of its kind was open: that one is dropped */
    D9M_PAIR_CLOSED,    /* an end that closed the open start (*start) */
    D9M_PAIR_STRAY_END, /* an end with nothing open */
} d9m_pair_result;

static inline bool d9m_mark_is_start(const d9m_mark *k) {
    return k->kind == D9M_POLL_START || k->kind == D9M_PARK;
}

/* Apply mark k (of the state's worker, in time order) to the state. On D9M_PAIR_CLOSED,
 * *start points at the start it closed, held in the state until the next start of its kind
 * (not copied: this runs for every mark). */
static inline d9m_pair_result d9m_pair(d9m_pair_state *s, const d9m_mark *k,
                                       const d9m_mark **start) {
    bool poll = k->kind == D9M_POLL_START || k->kind == D9M_POLL_END;
    bool *open = poll ? &s->in_poll : &s->parked;
    d9m_mark *held = poll ? &s->poll : &s->park;
    if (d9m_mark_is_start(k)) {
        bool was_open = *open;
        *open = true;
        *held = *k;
        return was_open ? D9M_PAIR_REOPENED : D9M_PAIR_OPENED;
    }
    if (!*open) return D9M_PAIR_STRAY_END;
    *open = false;
    *start = held;
    return D9M_PAIR_CLOSED;
}

#endif
