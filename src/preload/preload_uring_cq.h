/* What the shim reads of an io_uring, whoever set it up: liburing's struct io_uring
 * (preload_uring.c) or the rings a program mapped itself after io_uring_setup through
 * syscall() (preload_uring_raw.c). Both hand the same view of the completion queue, so that
 * completions are read by one code (preload_uring_cq.c): the first one the program handles is
 * the iteration's poll, the new ones are readiness wakes, a completed accept spawns a
 * connection, a completed close ends it. */
#ifndef D9_PRELOAD_URING_CQ_H
#define D9_PRELOAD_URING_CQ_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "preload.h"

/* The kernel's completion ring header and entries, as mapped in the program, for one call of
 * the program's (a wait or a submit): checked once as it is made (d9p_cq_view_usable), so that
 * the looks before and after the call check nothing again. */
typedef struct d9p_cq_view {
    const void *key;             /* which ring (for what this thread has seen of it) */
    const unsigned *khead, *ktail, *kring_mask, *kring_entries;
    const void *cqes;
    unsigned cqe_shift;          /* 1 with IORING_SETUP_CQE32 (32-byte CQEs), else 0 */
    unsigned mask, entries;      /* *kring_mask and *kring_entries as checked */
    unsigned *seen;              /* how far this thread saw the ring's CQEs (d9p_uring_seen) */
} d9p_cq_view;

/* Where this thread saw ring `key`'s CQEs up to (a ring new to it: at head), looked up once per
 * call of the program's, for the looks before and after it. */
D9P_HIDDEN unsigned *d9p_uring_seen(const void *key, unsigned head);

/* Whether the view's ring is as the kernel sets one up (every pointer there, a mask one less
 * than the entries, not zero), so that no index reads outside the CQE array; it keeps
 * the mask and entries it checked. A view that is not usable is passed on as NULL (no ring
 * to read). */
static inline bool d9p_cq_view_usable(d9p_cq_view *cq) {
    if (!cq->khead || !cq->ktail || !cq->kring_mask || !cq->kring_entries || !cq->cqes) return false;
    cq->mask = *cq->kring_mask;
    cq->entries = *cq->kring_entries;
    if (!cq->entries || cq->mask + 1 != cq->entries) return false;
    cq->seen = d9p_uring_seen(cq->key, *cq->khead);
    return true;
}

/* A request submitted: its user_data stands for (fd, opcode) until a later one takes its slot. */
D9P_HIDDEN void d9p_uring_note_request(uint64_t user_data, int fd, unsigned opcode);
/* The kernel's tail of the completion ring (what it posted up to). */
static inline unsigned d9p_cq_tail(const d9p_cq_view *cq) {
    return atomic_load_explicit((const _Atomic unsigned *)cq->ktail, memory_order_acquire);
}
/* No completion posted and not consumed (no view counts as empty). The views below are usable
 * ones (d9p_cq_view_usable) or NULL. */
static inline bool d9p_uring_cq_empty(const d9p_cq_view *cq) {
    return !cq || *cq->khead == d9p_cq_tail(cq);
}
/* Before a call: what the program consumed since the last look (wakes, connections). Inline,
 * the usual case: nothing (the program's head is where this thread saw up to). */
D9P_HIDDEN void d9p_uring_catch_up_consumed(const d9p_cq_view *cq);
static inline void d9p_uring_catch_up(const d9p_cq_view *cq) {
    if (cq && (int)(*cq->khead - *cq->seen) > 0) d9p_uring_catch_up_consumed(cq);
}
/* After a call that is no wait (a submit): the completions posted are readiness wakes. */
D9P_HIDDEN void d9p_uring_completions(const d9p_cq_view *cq);
/* After a home-grown loop's wait (parked: the call was recorded as a park): its unpark, with
 * the readiness wake of the first completion new since the last wait in the same hook call
 * and record (as an epoll wait's), before what the completions do (an accept's spawn, a
 * close's end); then the iteration starts (d9p_loop_wait_end_uring). cq may be NULL (no ring
 * to read): the unpark alone. */
D9P_HIDDEN void d9p_uring_loop_completions(const d9p_cq_view *cq, bool parked);

/* Nesting of the shim's io_uring interposers on this thread: a wait inside a wait (liburing
 * calling its own exported functions, a wrapper calling syscall()) goes straight through. */
D9P_HIDDEN extern __thread unsigned d9p_uring_depth __attribute__((tls_model("initial-exec")));

/* A wait of the program's on ring fd: park -> the call -> unpark, and the iteration's
 * boundary where it is a home-grown loop's (cq: its completions, NULL when there is no ring
 * to read). `call(arg)` is the program's call, its result returned as is. */
D9P_HIDDEN long d9p_uring_wait(const d9p_cq_view *cq, int ring_fd, const void *caller,
                               long (*call)(void *), void *arg);

/* io_uring rings set up through syscall() (preload_uring_raw.c): the ring fd was waited on
 * through a call the shim sees (any of its io_uring interposers). */
D9P_HIDDEN void d9p_uring_waited(int ring_fd);
/* io_uring_setup, io_uring_enter or io_uring_register made through syscall(): a[] its six
 * arguments, caller where syscall() was called from. */
D9P_HIDDEN long d9p_uring_syscall(long number, const long a[6], const void *caller);

/* A wait's two halves around a call of the program's (liburing's waits, preload_uring.c;
 * d9p_uring_wait): the begin returns whether the call parks, *home_loop whether it is a
 * home-grown loop's wait; the end (errno kept) unparks and reads the completions. Inline:
 * every request's wait of an io_uring loop passes here. */
static inline bool d9p_uring_wait_begin(const d9p_cq_view *cq, int ring_fd, const void *caller,
                                        bool *home_loop) {
    d9p_uring_depth++;
    d9p_uring_waited(ring_fd);
    d9p_uring_catch_up(cq);
    return d9p_poller_wait_begin(D9P_WAIT_URING, ring_fd, true, d9p_uring_cq_empty(cq), caller,
                                 home_loop);
}

static inline void d9p_uring_wait_end(const d9p_cq_view *cq, bool parked, bool home_loop) {
    int saved = errno;
    if (home_loop) { /* the unpark there, with the first new completion's wake */
        d9p_uring_loop_completions(cq, parked);
    } else {
        d9p_poller_wait_end(parked);
        if (cq && D9__ACTIVE()) d9p_uring_completions(cq);
    }
    errno = saved;
    d9p_uring_depth--;
}

#endif
