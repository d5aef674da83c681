/* Raw records in a thread's ring buffer, written by the hooks and decoded by the collector.
 * A record is 1..N 64-bit words; word 0 is (ticks << 8) | kind, keeping the low 56 bits of
 * the tick (the collector restores the rest), so the hot path writes one word per field. */
#ifndef D9_CORE_RECORDS_H
#define D9_CORE_RECORDS_H

#include <stdint.h>

enum d9_rec_kind {
    D9_REC_PAD = 0,          /* rest of the ring up to the wrap point is unused */
    D9_REC_POLL_BEGIN,       /* [1] task id  [2] loc id | local queue << 32 */
    D9_REC_POLL_END,         /* - */
    D9_REC_PARK,             /* [1] thread CPU ns (0: not measured)  [2] run-queue wait ns
                                (D9_NS_UNKNOWN: no schedstat; D9_NS_NOT_READ: not read, see
                                d9_schedstat_min_ticks)  [3] local queue */
    D9_REC_UNPARK,           /* same as PARK */
    D9_REC_WAKE,             /* [1] woken task id */
    D9_REC_SPAWN,            /* [1] task id  [2] loc id  [3] object address (0: none) */
    D9_REC_TERMINATE,        /* [1] task id */
    D9_REC_WORKER_BEGIN,     /* [1] worker id */
    D9_REC_WORKER_END,       /* - */
    D9_REC_DROPPED,          /* [1] the thread's cumulative drop count */
    D9_REC_CUSTOM,           /* [1] event type index | payload words << 32, then the payload */
    D9_REC_TASK_DUMP,        /* [1] task id  [2] payload words n  [3..3+n) the dump source's payload (d9_dump_unwind_fn) */
    D9_REC_WAKE_READY,       /* [1] woken task id; the waker is the poller (no task) */
    D9_REC_SPAN_BEGIN,       /* [1] span id  [2] name (loc id) */
    D9_REC_SPAN_END,         /* same */
    D9_REC_ALLOC,            /* [1] size  [2] address  [3] payload words n  [4..4+n) the stack, as a task dump's payload (sources/heap_sampler.h) */
    D9_REC_FREE,             /* [1] address  [2] size  [3] the allocation's ticks (0: unknown) */
    D9_REC_UNPARK_WAKE,      /* an UNPARK's [1..3], then [4] the task its poller found ready: the
                                unpark and that task's WAKE_READY at one tick, in one record */
    D9_REC_POLL_END_PARK,    /* a PARK's [1..3]: a POLL_END and that PARK at one tick, in one
                                record (d9__poll_end_park) */
};

enum {
    D9_REC_WORDS_POLL_BEGIN = 3,
    D9_REC_WORDS_POLL_END = 1,
    D9_REC_WORDS_PARK = 4,
    D9_REC_WORDS_WAKE = 2,
    D9_REC_WORDS_SPAWN = 4,
    D9_REC_WORDS_TERMINATE = 2,
    D9_REC_WORDS_WORKER_BEGIN = 2,
    D9_REC_WORDS_WORKER_END = 1,
    D9_REC_WORDS_DROPPED = 2,
    D9_REC_WORDS_SPAN = 3,
    D9_REC_WORDS_FREE = 4,
    D9_REC_WORDS_UNPARK_WAKE = 5,
};

/* Words of the record that starts at r; 0 for an unknown kind or an absurd length (a ring the
 * application wrote over). Shared by every reader of the rings. */
static inline uint64_t d9_record_words(const uint64_t *r) {
    switch ((unsigned)(r[0] & 0xff)) {
    case D9_REC_POLL_BEGIN: return D9_REC_WORDS_POLL_BEGIN;
    case D9_REC_POLL_END: return D9_REC_WORDS_POLL_END;
    case D9_REC_PARK:
    case D9_REC_UNPARK: return D9_REC_WORDS_PARK;
    case D9_REC_WAKE:
    case D9_REC_WAKE_READY: return D9_REC_WORDS_WAKE;
    case D9_REC_SPAWN: return D9_REC_WORDS_SPAWN;
    case D9_REC_TERMINATE: return D9_REC_WORDS_TERMINATE;
    case D9_REC_WORKER_BEGIN: return D9_REC_WORDS_WORKER_BEGIN;
    case D9_REC_WORKER_END: return D9_REC_WORDS_WORKER_END;
    case D9_REC_DROPPED: return D9_REC_WORDS_DROPPED;
    case D9_REC_SPAN_BEGIN:
    case D9_REC_SPAN_END: return D9_REC_WORDS_SPAN;
    case D9_REC_CUSTOM: return 2 + (r[1] >> 32);
    case D9_REC_TASK_DUMP: return r[2] > 4096 ? 0 : 3 + r[2];
    case D9_REC_ALLOC: return r[3] > 4096 ? 0 : 4 + r[3];
    case D9_REC_FREE: return D9_REC_WORDS_FREE;
    case D9_REC_UNPARK_WAKE: return D9_REC_WORDS_UNPARK_WAKE;
    case D9_REC_POLL_END_PARK: return D9_REC_WORDS_PARK;
    default: return 0;
    }
}

#define D9_REC_HEADER(ticks, kind) (((uint64_t)(ticks) << 8) | (uint64_t)(kind))
#define D9_REC_KIND(w) ((unsigned)((w) & 0xff))
#define D9_REC_TICKS56(w) ((w) >> 8)
#define D9_NS_UNKNOWN UINT64_MAX
#define D9_NS_NOT_READ (UINT64_MAX - 1)

#endif
