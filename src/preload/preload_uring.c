/* io_uring as a home-grown loop's wait: a thread that waits for completions of a ring is a
 * loop (preload_loop_work.c), the work between two waits its iteration, and each completion
 * names the fd of the request it completes where the shim saw that request.
 *
 * What is seen. liburing (liburing.so.2, shared, as Debian ships it) makes its system calls
 * itself, inside the library, so the shim interposes its exported calls instead: the waits
 * (__io_uring_get_cqe, behind io_uring_wait_cqe / io_uring_wait_cqe_nr; io_uring_wait_cqes,
 * io_uring_wait_cqe_timeout, io_uring_submit_and_wait, io_uring_submit_and_wait_timeout) and
 * io_uring_submit. Each is handed the program's struct io_uring, whose rings liburing mapped
 * from io_uring_setup's offsets; the shim reads them on the program's own thread, inside the
 * program's own call, as liburing itself is about to:
 *   - before the call, the SQEs prepared and not yet submitted (sqe_head..sqe_tail): their
 *     user_data -> (fd, opcode), unless the fd is a registered file's index
 *     (IOSQE_FIXED_FILE), which names no fd;
 *   - after it, the CQEs the kernel posted (the program's *khead..*ktail, read-only; the shim
 *     never moves a head or a tail): the first is the completion the program handles first
 *     (the iteration's poll is its connection's), the ones not seen at an earlier wait are
 *     readiness wakes. A completed accept is a connection's task spawned at "accept on
 *     <address>" (its result is the new fd); a completed close ends its fd's task.
 * A wait that asks for no completion (a peek) is no iteration boundary; a wait that finds its
 * completions already posted is a boundary but no park.
 *
 * The reading of completions is shared with rings the program drives through glibc's
 * syscall() (preload_uring_cq.c, preload_uring_raw.c).
 *
 * What is not seen: liburing linked statically; io_uring_enter made by the program with its
 * own syscall instruction; an SQPOLL ring whose loop never enters the kernel to wait (it
 * spins on the CQ ring: no call to see). io_uring_enter /
 * io_uring_enter2 called through liburing's exported wrappers with IORING_ENTER_GETEVENTS
 * and min_complete > 0 are waits too, but the shim has no struct io_uring there to read:
 * their iterations are polls of the loop's own task. */
#include <errno.h>
#include <stdatomic.h>

#include "preload.h"
#include "preload_uring_cq.h"

#if __has_include(<liburing.h>)
#include <liburing.h>

/* A ring's SQE and CQE sizes: 128 and 32 bytes with IORING_SETUP_SQE128 / _CQE32. */
static unsigned sqe_shift(const struct io_uring *ring) {
    return ring->flags & IORING_SETUP_SQE128 ? 1 : 0;
}
static unsigned cqe_shift(const struct io_uring *ring) {
    return ring->flags & IORING_SETUP_CQE32 ? 1 : 0;
}

/* The SQEs the program prepared and has not submitted yet. *kring_mask and *kring_entries
 * (the kernel's ring header) rather than ring_mask: liburing before 2.3 had no such field. */
static void note_pending(const struct io_uring *ring) {
    unsigned head = ring->sq.sqe_head, tail = ring->sq.sqe_tail;
    if (head == tail || !ring->sq.sqes || !ring->sq.kring_mask || !ring->sq.kring_entries || !D9__ACTIVE())
        return;
    unsigned mask = *ring->sq.kring_mask, entries = *ring->sq.kring_entries, shift = sqe_shift(ring);
    /* not a ring state liburing would submit from: nothing outside the SQE array is read */
    if (mask + 1 != entries || tail - head > entries) return;
    for (unsigned i = head; i != tail; i++) {
        const struct io_uring_sqe *sqe = &ring->sq.sqes[(i & mask) << shift];
        if ((sqe->flags & IOSQE_FIXED_FILE) || sqe->fd < 0) continue;
        d9p_uring_note_request(sqe->user_data, sqe->fd, sqe->opcode);
    }
}

/* The completion ring of liburing's struct io_uring, for preload_uring_cq.c. */
static d9p_cq_view cq_of(const struct io_uring *ring) {
    return (d9p_cq_view){.key = ring,
                         .khead = ring->cq.khead,
                         .ktail = ring->cq.ktail,
                         .kring_mask = ring->cq.kring_mask,
                         .kring_entries = ring->cq.kring_entries,
                         .cqes = ring->cq.cqes,
                         .cqe_shift = cqe_shift(ring)};
}

/* ---------------------------------------------------------------- the interposers */

/* liburing calls its own exported functions through its PLT (io_uring_wait_cqe_timeout ->
 * io_uring_wait_cqes -> __io_uring_get_cqe, io_uring_submit): those reach the interposers
 * again, inside the outer call, and go straight through (d9p_uring_depth). */

/* A call of liburing that may wait (waits: the program asked for completions). */
#define URING_WAIT(ring, waits, call)                                                      \
    do {                                                                                   \
        if (d9p_uring_depth || !(ring)) return (call);                                     \
        note_pending(ring);                                                                \
        if (!(waits)) return (call); /* a peek: no boundary, its CQEs are caught up later */ \
        d9p_cq_view cq_ = cq_of(ring);                                                     \
        d9p_cq_view *cqp_ = d9p_cq_view_usable(&cq_) ? &cq_ : NULL;                        \
        bool home_loop_;                                                                   \
        bool parked_ = d9p_uring_wait_begin(cqp_, (ring)->ring_fd,                         \
                                            __builtin_return_address(0), &home_loop_);     \
        int rc_ = (call);                                                                  \
        d9p_uring_wait_end(cqp_, parked_, home_loop_);                                     \
        return rc_;                                                                        \
    } while (0)

/* liburing's entry points, looked up lazily: a program without liburing never calls these. */
#define URING_NEXT(name, ...)                                                              \
    (__extension__({                                                                       \
        __typeof__(&name) f_ = D9P_NEXT(name);                                             \
        f_ ? f_(__VA_ARGS__) : -ENOSYS;                                                    \
    }))

D9P_EXPORT int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                  unsigned submit, unsigned wait_nr, sigset_t *sigmask) {
    URING_WAIT(ring, wait_nr > 0,
               URING_NEXT(__io_uring_get_cqe, ring, cqe_ptr, submit, wait_nr, sigmask));
}

D9P_EXPORT int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                  unsigned wait_nr, struct __kernel_timespec *ts,
                                  sigset_t *sigmask) {
    URING_WAIT(ring, wait_nr > 0,
               URING_NEXT(io_uring_wait_cqes, ring, cqe_ptr, wait_nr, ts, sigmask));
}

D9P_EXPORT int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                         struct __kernel_timespec *ts) {
    URING_WAIT(ring, !ts || ts->tv_sec || ts->tv_nsec,
               URING_NEXT(io_uring_wait_cqe_timeout, ring, cqe_ptr, ts));
}

D9P_EXPORT int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr) {
    URING_WAIT(ring, wait_nr > 0, URING_NEXT(io_uring_submit_and_wait, ring, wait_nr));
}

D9P_EXPORT int io_uring_submit_and_wait_timeout(struct io_uring *ring,
                                                struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
                                                struct __kernel_timespec *ts, sigset_t *sigmask) {
    URING_WAIT(ring, wait_nr > 0,
               URING_NEXT(io_uring_submit_and_wait_timeout, ring, cqe_ptr, wait_nr, ts, sigmask));
}

/* Not a wait, but what it completes at once (a close, a send that fits) may be consumed by
 * the program's inline peek before any wait of the shim's sees it. */
D9P_EXPORT int io_uring_submit(struct io_uring *ring) {
    if (d9p_uring_depth || !ring) return URING_NEXT(io_uring_submit, ring);
    note_pending(ring);
    d9p_cq_view view = cq_of(ring), *cq = d9p_cq_view_usable(&view) ? &view : NULL;
    d9p_uring_catch_up(cq);
    int rc = URING_NEXT(io_uring_submit, ring);
    if (cq && D9__ACTIVE()) {
        int saved = errno;
        d9p_uring_completions(cq);
        errno = saved;
    }
    return rc;
}

/* A raw enter (liburing's exported wrappers): a wait without a struct io_uring to read. */
typedef struct enter_args {
    unsigned fd, to_submit, min_complete, flags;
    sigset_t *sig;
    size_t sz;
    bool two;
} enter_args;

static long call_enter(void *p) {
    enter_args *a = p;
    if (a->two)
        return URING_NEXT(io_uring_enter2, a->fd, a->to_submit, a->min_complete, a->flags,
                          a->sig, a->sz);
    return URING_NEXT(io_uring_enter, a->fd, a->to_submit, a->min_complete, a->flags, a->sig);
}

static int raw_enter(enter_args *a, const void *caller) {
    if (d9p_uring_depth || !(a->flags & IORING_ENTER_GETEVENTS) || a->min_complete == 0)
        return (int)call_enter(a);
    return (int)d9p_uring_wait(NULL, (int)a->fd, caller, call_enter, a);
}

D9P_EXPORT int io_uring_enter(unsigned fd, unsigned to_submit, unsigned min_complete,
                              unsigned flags, sigset_t *sig) {
    enter_args a = {fd, to_submit, min_complete, flags, sig, 0, false};
    return raw_enter(&a, __builtin_return_address(0));
}

D9P_EXPORT int io_uring_enter2(unsigned fd, unsigned to_submit, unsigned min_complete,
                               unsigned flags, sigset_t *sig, size_t sz) {
    enter_args a = {fd, to_submit, min_complete, flags, sig, sz, true};
    return raw_enter(&a, __builtin_return_address(0));
}

#else
/* built without liburing's header: no io_uring interposers (source.poller says so) */
typedef int d9p_no_uring;
#endif /* liburing.h */
