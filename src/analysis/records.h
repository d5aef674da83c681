/* The time-ordering stage of the analysis. Events inside a trace file are ordered per stream,
 * not globally (dial9 flushes each thread's buffer as one stream, so streams overlap in time),
 * while analyses that relate different threads (a wake and the poll it causes, a CPU sample
 * and the poll it fell into) need one timeline. Per-worker pairing (PollStart with its
 * PollEnd, park with unpark) happens in stream order first; what it yields becomes one compact
 * record (32 bytes) per poll, park, wake, sample, spawn, ..., and records are put in time order
 * in a bounded window: when the window is full, it is sorted and its earlier half is handed
 * on, so memory stays bounded whatever the trace size. A record that arrives later than
 * what was already handed on is "late": still processed, and counted. */
#ifndef D9_ANALYSIS_RECORDS_H
#define D9_ANALYSIS_RECORDS_H

#include <stddef.h>
#include <stdint.h>

/* Kinds, in the order records of equal timestamp are processed: a spawn before anything else
 * of its task, a wake before the poll it causes, polls and parks before the samples inside. */
enum d9a_rec_kind {
    D9A_REC_SPAWN,   /* id task, ref location */
    D9A_REC_WAKE,    /* id woken task, worker = target worker (255 unknown), ref = low 32 bits
                        of the waker task id */
    D9A_REC_PARK,    /* worker, dur */
    D9A_REC_POLL,    /* worker, dur, id task, ref location, aux local queue (saturated) */
    D9A_REC_OFFCPU,  /* worker, dur (a SchedSwitch out..in interval), aux 1 when preempted;
                        aux D9A_POLL_CPU_*: instead the CPU time (dur) of the poll starting at
                        ts (a PollCpuEvent) */
    D9A_REC_SAMPLE,  /* worker (255 none), ref stack, aux source (0 CPU, 1 context switch) */
    D9A_REC_QUEUE,   /* ref global queue depth; the span marks (span_marks.h), kept beside the
                        records, are ordered as this kind: after the polls of their timestamp */
    D9A_REC_TERM,    /* id task */
    D9A_REC_KINDS
};

enum { D9A_POLL_CPU_EXACT = 2, D9A_POLL_CPU_NOT_EXACT = 3 };

typedef struct d9a_rec {
    uint64_t ts;
    uint64_t dur;
    uint64_t id;
    uint32_t ref;
    uint16_t worker;
    uint8_t kind;
    uint8_t aux;
} d9a_rec;

/* The sort key of a record of kind `kind` at ts: 61 bits of ns (73 years of CLOCK_MONOTONIC)
 * and the kind as the tie-breaker. */
static inline uint64_t d9a_rec_sort_key(uint64_t ts, unsigned kind) {
    if (ts >= (1ull << 61)) ts = (1ull << 61) - 1;
    return ts << 3 | (kind & 7u);
}

typedef struct d9a_rec_key {
    uint64_t key; /* ts << 3 | kind */
    uint32_t idx; /* into d9a_rec_buf.recs */
    uint32_t pad;
} d9a_rec_key;

typedef struct d9a_rec_buf {
    d9a_rec *recs;         /* in arrival order */
    d9a_rec_key *order, *tmp;
    size_t n, cap;
    size_t nsorted;        /* order[0..nsorted) is already the sorted order of recs[0..nsorted)
                              (what the last flush kept): only newer records get sorted, then
                              both runs are merged */
    size_t window;         /* records held at most */
} d9a_rec_buf;

/* Append one record; 0, or -1 when out of memory. */
int d9a_rec_buf_grow(d9a_rec_buf *b);
static inline int d9a_rec_buf_push(d9a_rec_buf *b, const d9a_rec *r) {
    if (b->n == b->cap && d9a_rec_buf_grow(b) != 0) return -1;
    b->recs[b->n++] = *r;
    return 0;
}
static inline int d9a_rec_buf_full(const d9a_rec_buf *b) { return b->n >= b->window; }
/* Fill b->order[0..n) with the records in (ts, kind, arrival) order. */
void d9a_rec_buf_sort(d9a_rec_buf *b);
/* Drop the records b->order[0..k) (handed on), keeping the others in arrival order. */
void d9a_rec_buf_drop_first(d9a_rec_buf *b, size_t k);
void d9a_rec_buf_free(d9a_rec_buf *b);

#endif
