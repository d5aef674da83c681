/* The completion side of an io_uring, read the same way whoever set the ring up (liburing's
 * struct io_uring, preload_uring.c; rings the program mapped itself, preload_uring_raw.c):
 *   - each request submitted names (fd, opcode) by its user_data, in a direct-mapped table;
 *   - after a call, the CQEs the kernel posted (the program's head to the kernel's tail,
 *     read-only; the shim never moves a head or a tail): the first is the completion the
 *     program handles first (the iteration's poll is its connection's), the ones not seen at
 *     an earlier look are readiness wakes; a completed accept is a connection's task spawned
 *     at "accept on <address>" (its result is the new fd); a completed close ends its task;
 *   - before a call, the CQEs the program consumed since the last look (handled in the same
 *     batch as they were posted, or found by an inline peek), read behind the head. */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>

#include "preload.h"
#include "preload_uring_cq.h"

__thread unsigned d9p_uring_depth __attribute__((tls_model("initial-exec"))) D9P_HIDDEN;

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

void d9p_uring_note_request(uint64_t user_data, int fd, unsigned opcode) {
    unsigned k = req_slot(user_data);
    atomic_store_explicit(&g_req[k].user_data, 0, memory_order_relaxed);
    atomic_store_explicit(&g_req[k].fd, fd + 1, memory_order_relaxed);
    atomic_store_explicit(&g_req[k].opcode, (uint8_t)opcode, memory_order_relaxed);
    atomic_store_explicit(&g_req[k].user_data, user_data, memory_order_relaxed);
}

static inline __attribute__((always_inline)) bool req_lookup(uint64_t data, int *fd, unsigned *opcode) {
    unsigned k = req_slot(data);
    if (atomic_load_explicit(&g_req[k].user_data, memory_order_relaxed) != data) return false;
    *fd = atomic_load_explicit(&g_req[k].fd, memory_order_relaxed) - 1;
    *opcode = atomic_load_explicit(&g_req[k].opcode, memory_order_relaxed);
    return *fd >= 0 && atomic_load_explicit(&g_req[k].user_data, memory_order_relaxed) == data;
}

/* ---------------------------------------------------------------- completions */

/* Per thread, for the last few rings it used: how far their CQEs were seen, so that a
 * completion is a wake once, however many looks find it still unhandled. */
#define RINGS_PER_THREAD 4
static __thread struct {
    const void *ring;
    unsigned seen;
} t_rings[RINGS_PER_THREAD] __attribute__((tls_model("initial-exec")));
static __thread unsigned t_next_ring __attribute__((tls_model("initial-exec")));

#define MAX_READY 64

/* What a new completion of a request on fd tells of connections: a completed accept begins
 * one, a completed close ends one. */
static bool tells_connections(const struct io_uring_cqe *cqe, unsigned op) {
    return (op == IORING_OP_ACCEPT && cqe->res >= 0) || (op == IORING_OP_CLOSE && cqe->res == 0);
}
static void tell_connections(const struct io_uring_cqe *cqe, int fd, unsigned op) {
    if (!tells_connections(cqe, op)) return;
    if (op == IORING_OP_ACCEPT) d9p_conn_accepted(fd, cqe->res);
    else d9p_conn_closed(fd);
}

/* The fd a completion stands for (-1: unknown, or a close: it wakes nobody); a new one
 * (`fresh`) also tells of connections. */
static int completion_fd(const struct io_uring_cqe *cqe, bool fresh) {
    int fd;
    unsigned op;
    if (!req_lookup(cqe->user_data, &fd, &op)) return -1;
    if (fresh) tell_connections(cqe, fd, op);
    return op == IORING_OP_CLOSE ? -1 : fd;
}

static const struct io_uring_cqe *cqe_at(const d9p_cq_view *cq, unsigned i) {
    return &((const struct io_uring_cqe *)cq->cqes)[(i & cq->mask) << cq->cqe_shift];
}

unsigned *d9p_uring_seen(const void *ring, unsigned head) {
    for (unsigned i = 0; i < RINGS_PER_THREAD; i++)
        if (t_rings[i].ring == ring) return &t_rings[i].seen;
    unsigned i = t_next_ring++ % RINGS_PER_THREAD;
    t_rings[i].ring = ring;
    t_rings[i].seen = head;
    return &t_rings[i].seen;
}

/* The kernel reuses a consumed slot only once the ring has moved a whole lap past it, so
 * with fewer CQEs than the ring holds since the last look they are still there; past that
 * they are skipped. */
void d9p_uring_catch_up_consumed(const d9p_cq_view *cq) {
    if (!D9__ACTIVE()) return;
    unsigned head = *cq->khead, entries = cq->entries, tail = d9p_cq_tail(cq);
    unsigned *seen = cq->seen;
    if ((int)(head - *seen) <= 0) return;
    if (tail - *seen >= entries || head - *seen > entries) {
        *seen = head;
        return;
    }
    int ready[MAX_READY], n = 0;
    for (unsigned i = *seen; i != head; i++) {
        int fd = completion_fd(cqe_at(cq, i), true);
        if (fd >= 0 && n < MAX_READY) ready[n++] = fd;
    }
    *seen = head;
    d9p_loop_ready(ready, n);
}

/* A home-grown loop's wait returned one completion, new, of a request on a connection that
 * does nothing to connections (not an accept, not a close): an io_uring server's request. Its
 * unpark, the wake and the connection's poll start in one hook call, without the general pass
 * below (which would come to the same); false when that does not apply, nothing done. */
static inline bool one_new_completion_begins(const d9p_cq_view *cq, bool parked) {
    unsigned head = *cq->khead, tail = d9p_cq_tail(cq);
    if (tail - head != 1 || (int)(head - *cq->seen) < 0) return false;
    const struct io_uring_cqe *cqe = cqe_at(cq, head);
    int fd;
    unsigned op;
    if (!req_lookup(cqe->user_data, &fd, &op) || op == IORING_OP_CLOSE || tells_connections(cqe, op) ||
        fd >= D9P_LOOP_FDS || !d9p_loop_wait_begins_one(parked, fd))
        return false;
    *cq->seen = tail;
    return true;
}

/* After a call: the completions posted, in one pass. The first is the completion the program
 * handles first (its fd: the iteration's poll, with home_loop); each new one with a known fd is a
 * readiness wake of its task. A home-grown loop's wait (home_loop) unparks at its first new
 * completion of a known request, with its readiness wake in the unpark's record (not a close's:
 * a close wakes nobody), before what any completion does to connections (an accept's spawn, a
 * close's end), or after the pass when there is none. While nothing else is recorded, that
 * unpark is owed rather than written: when the wait returned that one new completion, the
 * head's, on a connection whose task is known (an io_uring server's usual request), the unpark,
 * the wake and the connection's poll start are one hook call and one clock read
 * (d9p_loop_wait_begins_one, as an epoll wait's). */
static __attribute__((noinline)) void completions(const d9p_cq_view *cq, bool home_loop, bool parked) {
    bool unparked = !home_loop;
    int ready[MAX_READY], n = 0, first = -1, owed = -1; /* owed: the fd the unpark owes wakes */
    if (cq) {
        unsigned head = *cq->khead, entries = cq->entries, tail = d9p_cq_tail(cq);
        if (tail - head > entries) tail = head; /* not a ring state the program would read */
        unsigned *seen = cq->seen;
        if ((int)(*seen - head) < 0 || (int)(tail - *seen) < 0) *seen = head;
        for (unsigned i = head; i != tail; i++) {
            bool is_new = (int)(i - *seen) >= 0;
            int fd = -1;
            unsigned op = 0;
            const struct io_uring_cqe *cqe = cqe_at(cq, i);
            if (!(is_new || i == head) || !req_lookup(cqe->user_data, &fd, &op)) fd = -1;
            if (fd >= 0 && is_new) {
                bool wakes = op != IORING_OP_CLOSE, tells = tells_connections(cqe, op);
                if (!unparked && wakes && !tells && fd < D9P_LOOP_FDS) {
                    owed = fd; /* its wake goes with the unpark, written when due */
                    unparked = true;
                } else {
                    if (tells && owed >= 0) { /* the unpark comes before what this does */
                        d9p_loop_wait_unpark_uring(parked, owed);
                        owed = -1;
                    }
                    bool woken = !unparked && d9p_loop_wait_unpark_uring(parked, wakes ? fd : -1);
                    unparked = true;
                    if (tells) tell_connections(cqe, fd, op);
                    if (wakes && !woken && n < MAX_READY) ready[n++] = fd;
                }
            }
            if (i == head) first = op == IORING_OP_CLOSE ? -1 : fd;
        }
        *seen = tail;
    }
    if (!home_loop) {
        if (n) d9p_loop_ready(ready, n);
        return;
    }
    if (owed >= 0 && n == 0 && first == owed && d9p_loop_wait_begins_one(parked, owed)) return;
    if (owed >= 0) d9p_loop_wait_unpark_uring(parked, owed);
    else if (!unparked) d9p_loop_wait_unpark_uring(parked, -1);
    d9p_loop_wait_end_uring(first, ready, n);
}

void d9p_uring_completions(const d9p_cq_view *cq) { completions(cq, false, false); }
void d9p_uring_loop_completions(const d9p_cq_view *cq, bool parked) {
    if (!cq || !one_new_completion_begins(cq, parked)) completions(cq, true, parked);
}

/* ---------------------------------------------------------------- a wait */

long d9p_uring_wait(const d9p_cq_view *cq, int ring_fd, const void *caller,
                    long (*call)(void *), void *arg) {
    bool home_loop;
    bool parked = d9p_uring_wait_begin(cq, ring_fd, caller, &home_loop);
    long rc = call(arg);
    d9p_uring_wait_end(cq, parked, home_loop);
    return rc;
}
