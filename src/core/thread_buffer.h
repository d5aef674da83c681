/* Per-thread event buffer: a single-producer / single-consumer ring of 64-bit words.
 * The owning thread appends records without locks, allocation or system calls; the
 * background collector reads everything up to the published head and then releases it.
 * A record never straddles the end of the ring (a PAD record fills the gap instead).
 * When the ring is full the event is dropped and counted; the next record the thread manages
 * to write is preceded by a DROPPED record carrying the thread's cumulative drop count. */
#ifndef D9_CORE_THREAD_BUFFER_H
#define D9_CORE_THREAD_BUFFER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/owned_fd.h"
#include "core/records.h"

typedef struct d9_thread {
    /* ---- producer's line: touched on every event ---- */
    uint64_t *ring;
    uint64_t mask;            /* capacity in words - 1 */
    uint64_t head;            /* producer's write position (words, never wraps) */
    uint64_t limit;           /* head may grow up to here without looking at the tail */
    _Atomic uint64_t head_pub;/* head as published to the consumer */
    uint32_t local_queue;
    bool drop_pending;        /* a DROPPED record is owed */
    uint32_t worker_pending;  /* a WORKER_BEGIN (id) / END (255) record is owed; UINT32_MAX: none */
    int schedstat_fd;         /* -1: not opened yet, -2: unavailable */
    d9_fd_id schedstat_id;    /* what it was opened on (the program may close our fds) */
    uint64_t schedstat_ticks; /* when schedstat was last read (ticks) ... */
    uint32_t schedstat_run;   /* ... in which recording (d9_schedstat_run) */
    uint64_t unpark_ticks;    /* the last unpark's time, 0 once the thread parks again */
    /* ---- consumer's line ---- */
    _Alignas(64) _Atomic uint64_t tail; /* consumer's read position */
    /* ---- shared, rarely written ---- */
    _Alignas(64) _Atomic uint64_t drops_total; /* events dropped by this thread (producer-written) */
    _Atomic uint32_t worker_id;               /* latest worker id (255: not a worker) */
    _Atomic int exited;                       /* the thread is gone; consumer frees after draining */
    pid_t tid;
    char name[16];
    struct d9_thread *next;   /* registry list */
    /* ---- consumer-private decoding state ---- */
    uint32_t c_worker;
    uint64_t c_task;          /* task being polled, 0 if none */
    uint64_t c_ss_wait;       /* run-queue wait at the thread's last schedstat read (D9_NS_UNKNOWN: none) */
    uint64_t c_drops_reported;  /* drops put in a DroppedEventsEvent */
    uint64_t c_drops_written;   /* ... of which the event reached the disk */
    uint64_t c_drops_counted;   /* ... of which counted in the stats */
    uint64_t c_events;        /* records decoded (for stats) */
    uint64_t c_end;           /* head read in the current drain */
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
 * Set by the sources at start; NULL when none. */
extern void (*volatile d9_thread_register_hook)(d9_thread *t);

/* Words the ring holds; set before threads register (from d9_config.buffer_kb). */
void d9_thread_set_ring_words(uint64_t words);

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
/* Free the buffers of exited threads whose data the collector has consumed. */
void d9_threads_reap(void);
/* After fork() in the child: forget every buffer (their threads do not exist here). */
void d9_threads_forget_after_fork(void);
/* Whether a collector runs (exited threads are then freed by it, not by their destructor). */
void d9_threads_set_collector_running(bool running);

#endif
