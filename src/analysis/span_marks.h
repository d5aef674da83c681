/* Span marks beside the records (records.h). A recorder that merges its threads by time writes
 * the marks in time order, so they need none of the records' sort: they are appended to an
 * array of their own, as they come, and the sweep takes them in step with the sorted records
 * (sweep.c), ordered as D9A_REC_QUEUE records of their timestamp. Marks from a writer that
 * does not merge by time are sorted (stable: equal timestamps keep their arrival order) when
 * the sweep asks for them. */
#ifndef D9_ANALYSIS_SPAN_MARKS_H
#define D9_ANALYSIS_SPAN_MARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9a_span_mark {
    uint64_t ts;
    uint64_t span_id;
    uint64_t task;   /* 0: none */
    uint32_t name;   /* interned */
    uint16_t worker; /* D9_WORKER_NONE: none */
    bool begin;      /* span enter, else exit */
} d9a_span_mark;

typedef struct d9a_span_marks {
    d9a_span_mark *m, *tmp; /* pending: m[head..n), as they arrived (time order once sorted) */
    size_t *runs;           /* the sort's scratch: where each run in order begins */
    size_t head, n, cap;
    uint64_t newest;        /* the newest mark's time so far */
    bool unordered;         /* a mark older than that arrived: the pending ones need a sort */
} d9a_span_marks;

/* Room for one more mark: 0, or -1 when out of memory. */
int d9a_span_marks_grow(d9a_span_marks *s);

/* The next mark's slot, for the caller to fill (NULL when out of memory): a mark at ts. */
static inline d9a_span_mark *d9a_span_marks_add(d9a_span_marks *s, uint64_t ts) {
    if (s->n == s->cap && d9a_span_marks_grow(s) != 0) return NULL;
    if (ts < s->newest) s->unordered = true;
    else s->newest = ts;
    return &s->m[s->n++];
}

static inline size_t d9a_span_marks_pending(const d9a_span_marks *s) { return s->n - s->head; }

/* The pending marks, in time order (sorted first if they did not arrive so); NULL when out of
 * memory for the sort. */
const d9a_span_mark *d9a_span_marks_in_order(d9a_span_marks *s);

/* The first k pending marks were handed on. */
static inline void d9a_span_marks_drop(d9a_span_marks *s, size_t k) {
    s->head += k;
    if (s->head == s->n) s->head = s->n = 0;
}

void d9a_span_marks_free(d9a_span_marks *s);

#endif
