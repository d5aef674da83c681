/* Whose worker a thread's switch record and CPU sample are: one rule for analyze, fold (its
 * off-CPU attribution and the `samples` table's worker_id), export and the viewer (its decoder
 * gives each sample its worker, viewer/src/attribution.js each switch record).
 *
 * A thread's worker is the latest worker id its records named, in stream order (switch
 * records, park and unpark, its WorkerRegisteredEvent): a thread that changes worker mid-run
 * (d9_worker_end, d9_worker_begin) is the new worker's from its next record that names one.
 * A record without a worker id (D9_WORKER_NONE, as another writer may leave it) is its
 * thread's worker's. So an off-CPU interval is the worker's its switch-in names (it overrides
 * the switch-out's: the thread ran again as that worker), and a CPU sample without a worker
 * id, from the timer sampler (source 0) as much as at a context switch (source 1), is its
 * thread's worker's: the thread was running as that worker when it was sampled. */
#ifndef D9_MODEL_THREAD_WORKER_H
#define D9_MODEL_THREAD_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/u64_map.h"
#include "format/wire.h"

/* The worker of a record: its own id when it names one, else its thread's. */
static inline uint64_t d9m_record_worker(uint64_t thread_worker, uint64_t record_worker) {
    return record_worker != D9_WORKER_NONE ? record_worker : thread_worker;
}

/* An off-CPU interval's worker from its two records' (each as d9m_record_worker gives it):
 * the switch-in's overrides. */
static inline uint64_t d9m_switch_worker(uint64_t out_worker, uint64_t in_worker) {
    return d9m_record_worker(out_worker, in_worker);
}

/* Each thread's worker so far, for a reader in stream order. */
typedef struct d9m_thread_workers {
    d9_u64_map of; /* tid -> worker id */
    /* the latest note, to skip the map for a thread's records in a row (a pass's hot path) */
    uint64_t last_tid, last_worker;
    bool have_last;
} d9m_thread_workers;

static inline uint64_t d9m_thread_worker_of(const d9m_thread_workers *t, uint64_t tid) {
    if (t->have_last && t->last_tid == tid) return t->last_worker;
    const uint64_t *w = d9_u64_map_get(&t->of, tid);
    return w ? *w : D9_WORKER_NONE;
}

/* A record of thread `tid` naming `record_worker`: sets *worker to the record's worker (the
 * rule above) and remembers it as the thread's. -1: out of memory. */
static inline int d9m_thread_worker_note(d9m_thread_workers *t, uint64_t tid, uint64_t record_worker,
                                         uint64_t *worker) {
    if (record_worker == D9_WORKER_NONE) {
        *worker = d9m_thread_worker_of(t, tid);
        return 0;
    }
    *worker = record_worker;
    if (t->have_last && t->last_tid == tid && t->last_worker == record_worker) return 0;
    uint64_t *v = d9_u64_map_upsert(&t->of, tid, record_worker);
    if (!v) return -1;
    *v = record_worker;
    t->last_tid = tid;
    t->last_worker = record_worker;
    t->have_last = true;
    return 0;
}

static inline void d9m_thread_workers_free(d9m_thread_workers *t) { d9_u64_map_free(&t->of); }

#endif
