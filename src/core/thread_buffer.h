/* Per-thread event buffer: a single-producer / single-consumer ring of 64-bit words.
 * The owning thread appends records without locks, allocation or system calls; the
 * background collector reads everything up to the published head and then releases it.
 * A record never straddles the end of the ring (a PAD record fills the gap instead).
 * A ring starts small and, when full or when the collector finds it filling up between drains,
 * the thread moves on to one twice as large (up to the configured size) if the process-wide
 * ring memory budget allows; after a long quiet time it moves back to one half as large, which
 * gives the budget back to threads that need it (D9_RING_SHRINK_FILL); positions never wrap, so the
 * rings of a thread form a chain by position and the collector frees the older ones once it
 * has read them. When no larger ring can be had the event is dropped and counted; the next
 * record the thread manages to write is preceded by a DROPPED record carrying the thread's
 * cumulative drop count. */
#ifndef D9_CORE_THREAD_BUFFER_H
#define D9_CORE_THREAD_BUFFER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/collector_cpu_varint.h"
#include "core/owned_fd.h"
#include "core/records.h"

/* One ring of a thread's chain. Immutable once published except `newer`, which the producer
 * sets (release) before any record beyond `start` is published. */
typedef struct d9_ring {
    uint64_t *words;          /* NULL: no memory (the budget was spent); holds nothing */
    uint64_t mask;            /* capacity in words - 1 */
    uint64_t start;           /* first position written in this ring */
    struct d9_ring *_Atomic newer;
} d9_ring;

typedef struct d9_thread {
    /* ---- producer's line: touched on every event ---- */
    uint64_t *ring;           /* the newest ring's words (NULL: none yet) */
    uint64_t mask;            /* its capacity in words - 1 */
    uint64_t head;            /* producer's write position (words, never wraps) */
    uint64_t limit;           /* head may grow up to here without looking at the tail */
    _Atomic uint64_t head_pub;/* head as published to the consumer */
    uint32_t local_queue;
    bool in_poll;             /* a poll begin recorded without its end yet (d9__poll_end_paused) */
    bool parked;              /* a park recorded without its unpark yet (d9__unpark_paused) */
    bool drop_pending;        /* a DROPPED record is owed */
    uint32_t worker_pending;  /* a WORKER_BEGIN (id) / END (255) record is owed; UINT32_MAX: none */
    int schedstat_fd;         /* -1: not opened yet, -2: unavailable */
    d9_fd_id schedstat_id;    /* what it was opened on (the program may close our fds) */
    uint64_t schedstat_ticks; /* when schedstat was last read (ticks) ... */
    uint32_t schedstat_run;   /* ... in which recording (d9_schedstat_run) */
    uint32_t schedstat_kept_run; /* the recording the two below were kept for (schedstat.h) */
    uint64_t schedstat_due;   /* ticks from which a park or unpark must take the slow path ... */
    uint64_t park_wait;       /* ... and before which its record's run-queue wait is this */
    uint64_t unpark_ticks;    /* the last unpark's time, 0 once the thread parks again */
    uint64_t park_cpu_ns;     /* the CPU time read at the last recorded park, for its unpark ... */
    uint32_t park_cpu_key;    /* ... if this is d9_thread_cpu_time_key (0: none, hooks.c) */
    d9_ring *w_ring;          /* the newest ring (producer's); positions before its start are
                                 in older rings the collector may have freed */
    /* ---- consumer's line ---- */
    _Alignas(64) _Atomic uint64_t tail; /* consumer's read position */
    /* ---- shared, rarely written ---- */
    _Alignas(64) _Atomic uint64_t drops_total; /* events dropped by this thread (producer-written) */
    _Atomic uint32_t worker_id;               /* latest worker id (255: not a worker) */
    _Atomic bool ever_worker;                 /* set by its first d9_worker_begin, never cleared */
    _Atomic int exited;                       /* the thread is gone; consumer frees after draining */
    _Atomic uint8_t resize_wanted;            /* consumer: D9_RING_GROW / D9_RING_SHRINK (d9_thread_note_fill) */
    pid_t tid;
    char name[16];
    struct d9_thread *next;   /* registry list */
    /* ---- consumer-private decoding state ---- */
    uint32_t c_worker;
    uint64_t c_task;          /* task being polled, 0 if none */
    uint64_t c_poll_start;    /* its start, kept only while trigger rules are armed (flight_rule_check.h) */
    uint64_t c_ss_wait;       /* run-queue wait at the thread's last schedstat read (D9_NS_UNKNOWN: none) */
    d9_cpu_varint_memo c_cpu; /* the last park's or unpark's cpu_time_ns taken fast, and its varint */
    uint64_t c_drops_reported;  /* drops put in a DroppedEventsEvent */
    uint64_t c_drops_written;   /* ... of which the event reached the disk */
    uint64_t c_drops_counted;   /* ... of which counted in the stats */
    bool c_exit_seen;           /* exited when this drain reported its last drops, before the write */
    uint64_t c_events;        /* records decoded (for stats) */
    uint64_t c_end;           /* head read in the current drain */
    uint64_t c_quiet_since;   /* ns since which every drain found little pending (0: not quiet) */
    d9_ring *c_ring;          /* the oldest ring not freed (the collector's end of the chain) */
} d9_thread;

/* The calling thread's buffer (initial-exec TLS: one load, no call, even in libdial9.so). */
extern __thread d9_thread *d9__tls_thread __attribute__((tls_model("initial-exec")));
d9_thread *d9_thread_register(void);

/* The calling thread's buffer, registering the thread on first use. NULL when out of memory. */
static inline d9_thread *d9_thread_current(void) {
    d9_thread *t = d9__tls_thread;
    return __builtin_expect(t != NULL, 1) ? t : d9_thread_register();
}
/* The calling thread's buffer, or NULL if it has none yet (never registers). */
static inline d9_thread *d9_thread_peek(void) { return d9__tls_thread; }

/* Called on each thread when it registers (first event), e.g. to arm a per-thread CPU timer.
 * Set by the sources when the library is loaded, before any thread records; NULL when none. */
extern void (*volatile d9_thread_register_hook)(d9_thread *t);

/* Called on a thread about to move to another ring (records before it then live in a ring the
 * collector may free), e.g. for the task dumps to scan what they have not scanned. Set when the
 * library is loaded, as the register hook. */
extern void (*volatile d9_thread_move_hook)(d9_thread *t);

/* Ring sizes and the budget for all rings together; set before threads register (from
 * d9_config.buffer_kb and memory_budget_mb). A ring starts at min(D9_RING_FIRST_WORDS,
 * max_words) words and doubles up to max_words while the budget allows. */
#define D9_RING_FIRST_WORDS 512u
void d9_thread_set_ring_limits(uint64_t max_words, uint64_t budget_bytes);

/* Ring memory in use by every thread now, and the most it has been (bytes). */
uint64_t d9_ring_bytes_used(void);
uint64_t d9_ring_bytes_peak(void);

/* Collector: the ring that holds position `pos` of t, starting the search at `r` (a ring at or
 * before it in the chain). */
static inline d9_ring *d9_ring_for(d9_ring *r, uint64_t pos) {
    for (d9_ring *n; (n = atomic_load_explicit(&r->newer, memory_order_acquire)) && pos >= n->start;) r = n;
    return r;
}
/* Collector: a drain found this share of t's newest ring (of `words` words) pending (0..1), at
 * `now_ns` (CLOCK_MONOTONIC).
 * - Above D9_RING_GROW_FILL the thread moves to a ring twice as large at its next slow path (at
 *   the latest when it reaches the end of its ring), so that rings grow to hold what arrives
 *   between two drains at the flush interval, instead of the collector draining ever more often
 *   to keep a small ring from filling: each drain costs a wake-up, a snapshot and a write, and
 *   first rings kept small by 1 ms drains cost memcached 3 % of a CPU (bench/README.md, "Ring
 *   growth").
 * - When every drain for d9_ring_shrink_after_ns found less than D9_RING_SHRINK_FILL pending,
 *   the thread moves to a ring half as large (not below the first size) the same way: a burst
 *   does not keep its ring's memory for ever, out of the budget other threads may need. Half of
 *   a ring that was under 1/32 full stays under 1/16, far from growing again. */
#define D9_RING_GROW_FILL 0.125
#define D9_RING_SHRINK_FILL (1.0 / 32)
enum { D9_RING_KEEP, D9_RING_GROW, D9_RING_SHRINK };
void d9_thread_note_fill(d9_thread *t, double fill, uint64_t words, uint64_t now_ns);
/* How long a ring must stay quiet to shrink (default 30 s; tests shorten it). */
extern _Atomic uint64_t d9_ring_shrink_after_ns;
/* Collector: everything before `tail` has been read; free the rings that hold only that. */
void d9_thread_release_consumed(d9_thread *t, uint64_t tail);

/* Slow path of an append: make room for `words` contiguous words at t->head, writing a PAD
 * and owed WORKER/DROPPED records as needed. Returns false (and counts a drop) when full. */
bool d9_thread_make_room(d9_thread *t, uint64_t words);

/* Record that this thread became worker `id` (255: stopped being one). Never dropped: when the
 * ring is full it is owed and written before the next record that fits. */
void d9_thread_record_worker(d9_thread *t, uint32_t id);

static inline uint64_t *d9_thread_reserve(d9_thread *t, uint64_t words) {
    if (__builtin_expect(t->head + words > t->limit, 0) && !d9_thread_make_room(t, words))
        return NULL;
    return t->ring + (t->head & t->mask);
}

static inline void d9_thread_commit(d9_thread *t, uint64_t words) {
    t->head += words;
    atomic_store_explicit(&t->head_pub, t->head, memory_order_release);
}

/* Registry of every thread that has a buffer, for the collector. The snapshot is an array the
 * caller frees; it stays valid because only the collector frees exited threads. */
d9_thread **d9_threads_snapshot(size_t *count);
/* Free the buffers of exited threads whose data the collector has consumed and whose drops it
 * has reported (collector-side: reads c_drops_reported). */
void d9_threads_reap(void);
/* After fork() in the child: forget every buffer (their threads do not exist here). */
void d9_threads_forget_after_fork(void);
/* Whether a collector runs (exited threads are then freed by it, not by their destructor). */
void d9_threads_set_collector_running(bool running);

#endif
