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
 * What is not seen: liburing linked statically; io_uring_enter made by the program with its
 * own syscall instruction or through libc's syscall(); an SQPOLL ring whose loop never
 * enters the kernel to wait (it spins on the CQ ring: no call to see). io_uring_enter /
 * io_uring_enter2 called through liburing's exported wrappers with IORING_ENTER_GETEVENTS
 * and min_complete > 0 are waits too, but the shim has no struct io_uring there to read:
 * their iterations are polls of the loop's own task. */
#include <errno.h>
#include <stdatomic.h>

#include "preload.h"

#if __has_include(<liburing.h>)
#include <liburing.h>

/* ---------------------------------------------------------------- user_data -> request */

/* Direct-mapped: a later request with the same slot overwrites; a lookup checks user_data,
 * so a collision or a stale slot is a miss (the completion then names no fd). */
#define REQ_SLOTS 16384
static struct {
    _Atomic uint64_t user_data;
    _Atomic int32_t fd; /* the fd + 1: 0 is an empty slot */
    _Atomic uint8_t opcode;
} g_req[REQ_SLOTS];

static unsigned req_slot(uint64_t data) {
    return (unsigned)((data * 0x9e3779b97f4a7c15ull) >> 50) & (REQ_SLOTS - 1);
}

static bool req_lookup(uint64_t data, int *fd, unsigned *opcode) {
    unsigned k = req_slot(data);
    if (atomic_load_explicit(&g_req[k].user_data, memory_order_relaxed) != data) return false;
    *fd = atomic_load_explicit(&g_req[k].fd, memory_order_relaxed) - 1;
    *opcode = atomic_load_explicit(&g_req[k].opcode, memory_order_relaxed);
    return *fd >= 0 && atomic_load_explicit(&g_req[k].user_data, memory_order_relaxed) == data;
}

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
    if (!ring || !ring->sq.sqes || !ring->sq.kring_mask || !ring->sq.kring_entries || !D9__ACTIVE())
        return;
    unsigned mask = *ring->sq.kring_mask, entries = *ring->sq.kring_entries;
    unsigned head = ring->sq.sqe_head, tail = ring->sq.sqe_tail;
    /* not a ring state liburing would submit from: nothing outside the SQE array is read */
    if (mask + 1 != entries || tail - head > entries) return;
    for (unsigned i = head; i != tail; i++) {
        const struct io_uring_sqe *sqe = &ring->sq.sqes[(i & mask) << sqe_shift(ring)];
        if ((sqe->flags & IOSQE_FIXED_FILE) || sqe->fd < 0) continue;
        unsigned k = req_slot(sqe->user_data);
        atomic_store_explicit(&g_req[k].user_data, 0, memory_order_relaxed);
        atomic_store_explicit(&g_req[k].fd, sqe->fd + 1, memory_order_relaxed);
        atomic_store_explicit(&g_req[k].opcode, sqe->opcode, memory_order_relaxed);
        atomic_store_explicit(&g_req[k].user_data, sqe->user_data, memory_order_relaxed);
    }
}

/* ---------------------------------------------------------------- completions */

/* Per thread, for the last few rings it used: how far their CQEs were seen, so that a
 * completion is a wake once, however many looks find it still unhandled. */
#define RINGS_PER_THREAD 4
static __thread struct {
    const struct io_uring *ring;
    unsigned seen;
} t_rings[RINGS_PER_THREAD] __attribute__((tls_model("initial-exec")));
static __thread unsigned t_next_ring __attribute__((tls_model("initial-exec")));

static bool cq_empty(const struct io_uring *ring) {
    return !ring || !ring->cq.khead || !ring->cq.ktail ||
           *ring->cq.khead == atomic_load_explicit((_Atomic unsigned *)ring->cq.ktail,
                                                   memory_order_acquire);
}

#define MAX_READY 64

/* The fd a completion stands for; a new one (`fresh`) also tells of connections: a
 * completed accept begins one, a completed close ends one. */
static int completion_fd(const struct io_uring_cqe *cqe, bool fresh) {
    int fd;
    unsigned op;
    if (!req_lookup(cqe->user_data, &fd, &op)) return -1;
    if (fresh && op == IORING_OP_ACCEPT && cqe->res >= 0) d9p_conn_accepted(fd, cqe->res);
    if (op == IORING_OP_CLOSE) {
        if (fresh && cqe->res == 0) d9p_conn_closed(fd);
        return -1;
    }
    return fd;
}

/* The CQ ring as the kernel set it up (a mask one less than the entries, a power of two), so
 * that no index reads outside the CQE array. */
static bool cq_usable(const struct io_uring *ring) {
    return ring && ring->cq.khead && ring->cq.ktail && ring->cq.kring_mask &&
           ring->cq.kring_entries && ring->cq.cqes &&
           *ring->cq.kring_mask + 1 == *ring->cq.kring_entries;
}

static const struct io_uring_cqe *cqe_at(const struct io_uring *ring, unsigned i) {
    return &ring->cq.cqes[(i & *ring->cq.kring_mask) << cqe_shift(ring)];
}

/* Where this thread saw ring's CQEs up to; a ring new to it starts at its head. */
static unsigned *track(const struct io_uring *ring, unsigned head) {
    for (unsigned i = 0; i < RINGS_PER_THREAD; i++)
        if (t_rings[i].ring == ring) return &t_rings[i].seen;
    unsigned i = t_next_ring++ % RINGS_PER_THREAD;
    t_rings[i].ring = ring;
    t_rings[i].seen = head;
    return &t_rings[i].seen;
}

/* CQEs the program consumed without a wait of the shim's in between (handled in the same
 * batch as they were posted, or found by its inline peek): what they tell of connections and
 * their readiness, read behind the head. The kernel reuses a consumed slot only once the
 * ring has moved a whole lap past it, so with fewer CQEs than the ring holds since the last
 * look they are still there; past that they are skipped. */
static void catch_up(const struct io_uring *ring) {
    if (!cq_usable(ring) || !D9__ACTIVE()) return;
    unsigned head = *ring->cq.khead, entries = *ring->cq.kring_entries;
    unsigned tail = atomic_load_explicit((_Atomic unsigned *)ring->cq.ktail, memory_order_acquire);
    unsigned *seen = track(ring, head);
    if ((int)(head - *seen) <= 0) return;
    if (tail - *seen >= entries || head - *seen > entries) {
        *seen = head;
        return;
    }
    int ready[MAX_READY], n = 0;
    for (unsigned i = *seen; i != head; i++) {
        int fd = completion_fd(cqe_at(ring, i), true);
        if (fd >= 0 && n < MAX_READY) ready[n++] = fd;
    }
    *seen = head;
    d9p_loop_ready(ready, n);
}

/* After a call: the CQEs posted, from the program's head. The first is the one it handles
 * first (its fd is the iteration's poll); those not seen at an earlier look are wakes. */
static void completions(const struct io_uring *ring, bool home_loop) {
    if (!cq_usable(ring)) {
        if (home_loop) d9p_loop_wait_end_uring(-1, NULL, 0);
        return;
    }
    unsigned head = *ring->cq.khead, entries = *ring->cq.kring_entries;
    unsigned tail = atomic_load_explicit((_Atomic unsigned *)ring->cq.ktail, memory_order_acquire);
    if (tail - head > entries) tail = head; /* not a ring state liburing would read */
    unsigned *seen = track(ring, head);
    if ((int)(*seen - head) < 0 || (int)(tail - *seen) < 0) *seen = head;
    int ready[MAX_READY], n = 0, first = -1;
    for (unsigned i = head; i != tail; i++) {
        bool is_new = (int)(i - *seen) >= 0;
        int fd = is_new || i == head ? completion_fd(cqe_at(ring, i), is_new) : -1;
        if (i == head) first = fd;
        if (is_new && fd >= 0 && n < MAX_READY) ready[n++] = fd;
    }
    *seen = tail;
    if (home_loop) d9p_loop_wait_end_uring(first, ready, n);
    else d9p_loop_ready(ready, n);
}

/* ---------------------------------------------------------------- the interposers */

/* liburing calls its own exported functions through its PLT (io_uring_wait_cqe_timeout ->
 * io_uring_wait_cqes -> __io_uring_get_cqe, io_uring_submit): those reach the interposers
 * again, inside the outer call, and go straight through. */
static __thread unsigned t_depth __attribute__((tls_model("initial-exec")));

/* A call of liburing that may wait (waits: the program asked for completions). */
#define URING_WAIT(ring, waits, call)                                                      \
    do {                                                                                   \
        if (t_depth || !(ring)) return (call);                                             \
        note_pending(ring);                                                                \
        if (!(waits)) return (call); /* a peek: no boundary, its CQEs are caught up later */ \
        t_depth++;                                                                         \
        catch_up(ring);                                                                    \
        bool home_loop_;                                                                   \
        bool parked_ = d9p_poller_wait_begin(D9P_WAIT_URING, (ring)->ring_fd, true,        \
                                             cq_empty(ring),                               \
                                             __builtin_return_address(0), &home_loop_);    \
        int rc_ = (call);                                                                  \
        d9p_poller_wait_end(parked_);                                                      \
        if (home_loop_ || D9__ACTIVE()) {                                                  \
            int saved_ = errno;                                                            \
            completions(ring, home_loop_);                                                 \
            errno = saved_;                                                                \
        }                                                                                  \
        t_depth--;                                                                         \
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
    if (t_depth || !ring) return URING_NEXT(io_uring_submit, ring);
    note_pending(ring);
    catch_up(ring);
    int rc = URING_NEXT(io_uring_submit, ring);
    if (D9__ACTIVE()) {
        int saved = errno;
        completions(ring, false);
        errno = saved;
    }
    return rc;
}

/* A raw enter (liburing's exported wrappers): a wait without a struct io_uring to read. */
static int raw_enter(unsigned fd, unsigned min_complete, unsigned flags, const void *caller,
                     int (*enter)(void *), void *arg) {
    if (t_depth || !(flags & IORING_ENTER_GETEVENTS) || min_complete == 0) return enter(arg);
    bool home_loop;
    bool parked = d9p_poller_wait_begin(D9P_WAIT_URING, (int)fd, true, true, caller, &home_loop);
    int rc = enter(arg);
    d9p_poller_wait_end(parked);
    if (home_loop) {
        int saved = errno;
        d9p_loop_wait_end_uring(-1, NULL, 0);
        errno = saved;
    }
    return rc;
}

typedef struct enter_args {
    unsigned fd, to_submit, min_complete, flags;
    sigset_t *sig;
    size_t sz;
    bool two;
} enter_args;

static int call_enter(void *p) {
    enter_args *a = p;
    if (a->two)
        return URING_NEXT(io_uring_enter2, a->fd, a->to_submit, a->min_complete, a->flags,
                          a->sig, a->sz);
    return URING_NEXT(io_uring_enter, a->fd, a->to_submit, a->min_complete, a->flags, a->sig);
}

D9P_EXPORT int io_uring_enter(unsigned fd, unsigned to_submit, unsigned min_complete,
                              unsigned flags, sigset_t *sig) {
    enter_args a = {fd, to_submit, min_complete, flags, sig, 0, false};
    return raw_enter(fd, min_complete, flags, __builtin_return_address(0), call_enter, &a);
}

D9P_EXPORT int io_uring_enter2(unsigned fd, unsigned to_submit, unsigned min_complete,
                               unsigned flags, sigset_t *sig, size_t sz) {
    enter_args a = {fd, to_submit, min_complete, flags, sig, sz, true};
    return raw_enter(fd, min_complete, flags, __builtin_return_address(0), call_enter, &a);
}

#else
/* built without liburing's header: no io_uring interposers (source.poller says so) */
typedef int d9p_no_uring;
#endif /* liburing.h */
