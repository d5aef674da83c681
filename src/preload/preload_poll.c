/* Park / unpark around every blocking poller call: epoll_wait, epoll_pwait, epoll_pwait2,
 * poll, ppoll, select, pselect (and glibc's fortified __poll_chk / __ppoll_chk).
 *
 *   - Inside a loop library's run function (the adapters mark the thread): the adapters'
 *     rule. libuv and libevent park here when no callback is running; libev parks through its
 *     own release/acquire hooks, so nothing is recorded here. What the loop's epoll returns
 *     ready is a readiness wake of the tasks watching those fds (ready_wakes.h); a loop that
 *     wraps lazily swaps its trampolines here, as in the adapters' own epoll_park.c.
 *   - Anywhere else (a home-grown loop, a loop linked into the program): a thread becomes a
 *     worker the first time it blocks in a poller (timeout not zero), as worker <n> of runtime
 *     "epoll", "poll" or "select" (the first poller it blocked in; n counts threads per
 *     runtime; an io_uring loop at its first wait, parked or not). A thread that only polls
 *     with a zero timeout never becomes a worker. A worker whose poller has fds registered
 *     is a home-grown loop: its work between the poller's calls is polls
 *     (preload_loop_work.c), and its runtime is the loop's name
 *     ("aeProcessEvents (redis-server)", or "nginx epoll loop" where the function is not
 *     known), so every reader of the runtime.<name> metadata shows the loop. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "lazy_wrap.h"
#include "preload.h"
#include "poll_returned.h"
#include "ready_wakes.h"
#include "thread_state.h"

enum { RT_EPOLL, RT_POLL, RT_SELECT, RT_URING, RT_COUNT };
static const char *const k_runtime[RT_COUNT] = {"epoll", "poll", "select", "io_uring"};
static _Atomic uint32_t g_next_index[RT_COUNT];

/* Worker indexes of home-grown loops, counted per loop name (two threads running the same
 * loop function are its workers 0 and 1); a loop beyond the table shares the last row. */
#define LOOP_NAMES 32
static pthread_mutex_t g_loop_names_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_loop_name[LOOP_NAMES][200];
static uint32_t g_loop_next[LOOP_NAMES], g_loop_names;

static uint32_t loop_worker_index(const char *name) {
    pthread_mutex_lock(&g_loop_names_lock);
    uint32_t i = 0;
    while (i < g_loop_names && strcmp(g_loop_name[i], name) != 0) i++;
    if (i == g_loop_names && i < LOOP_NAMES) {
        snprintf(g_loop_name[i], sizeof g_loop_name[i], "%s", name);
        g_loop_names++;
    }
    uint32_t index = g_loop_next[i < LOOP_NAMES ? i : LOOP_NAMES - 1]++;
    pthread_mutex_unlock(&g_loop_names_lock);
    return index;
}

/* This thread's generic worker identity was taken (in this process). */
static __thread bool t_generic_worker __attribute__((tls_model("initial-exec")));
static _Atomic uint32_t g_fork_generation;
static __thread uint32_t t_generation __attribute__((tls_model("initial-exec")));
static __thread uint32_t t_worker_id __attribute__((tls_model("initial-exec")));

uint32_t d9p_poll_worker_id(void) {
    return t_generic_worker &&
                   t_generation == atomic_load_explicit(&g_fork_generation, memory_order_relaxed)
               ? t_worker_id
               : 0;
}

void d9p_poll_forget_after_fork(void) {
    for (int i = 0; i < RT_COUNT; i++) atomic_store(&g_next_index[i], 0);
    /* the child has one thread: the lock may have been held by another of the parent's */
    pthread_mutex_init(&g_loop_names_lock, NULL);
    g_loop_names = 0;
    memset(g_loop_next, 0, sizeof g_loop_next);
    atomic_fetch_add(&g_fork_generation, 1);
}

/* The runtime and index of this thread's worker identity: the loop's name when the thread
 * is a home-grown loop already (it blocked with fds registered), else its poller's kind. */
static uint32_t take_worker_id(int runtime) {
    const char *loop = d9p_loop_name();
    if (loop) return d9_worker_begin(loop, loop_worker_index(loop));
    return d9_worker_begin(k_runtime[runtime], atomic_fetch_add(&g_next_index[runtime], 1));
}

/* A thread outside any loop library blocks in a poller for the first time (in this process):
 * it takes its worker identity. Out of line, so that every later park saves no register. */
static __attribute__((noinline)) void take_generic_worker(int runtime, uint32_t gen) {
    t_generic_worker = true;
    t_generation = gen;
    t_worker_id = take_worker_id(runtime);
}

/* The thread's generic worker identity, taken once (in this process): at its first park, or
 * at a home-grown io_uring loop's first wait, parked or not (d9p_poller_wait_begin). */
static inline __attribute__((always_inline)) void take_generic_worker_once(int runtime) {
    uint32_t gen = atomic_load_explicit(&g_fork_generation, memory_order_relaxed);
    if (__builtin_expect(!t_generic_worker || t_generation != gen, 0)) take_generic_worker(runtime, gen);
}

/* A loop library's own poll (its backend poll() or select()): the poll its last callback owes
 * ends here, with the park (thread_state.h). Out of line: park_begin stays small enough to be
 * inlined into the wrappers, where a home-grown loop's poll() or select() takes it
 * (test_preload_home_request_instructions.sh: 654 -> 672 instructions a request when it was not). */
static __attribute__((noinline)) bool loop_library_park_begin(d9a_thread *s, bool may_block) {
    bool park = may_block && D9__ACTIVE();
    if (park || s->end_owed) {
        int saved = errno;
        d9a_park_owing_end(park);
        errno = saved;
    }
    return park;
}

/* A wait that does not park: the poll a home-grown loop's iteration owes ends alone. */
static __attribute__((noinline, cold)) void end_owed_alone(d9a_thread *s) {
    int saved = errno;
    d9a_end_owed_poll(s);
    errno = saved;
}

/* Whether this call parks; takes a worker identity for a thread outside any loop library. The
 * poll a home-grown loop's iteration owes (preload_loop_work.c, iteration_ends) ends with the
 * park, in one hook call and record (d9__poll_end_park). */
static inline __attribute__((always_inline)) bool park_begin(int runtime, bool may_block) {
    d9p_maybe_start_child();
    d9a_thread *s = &d9a_self;
    if (s->loop && s->park_on_epoll && s->depth == 0) return loop_library_park_begin(s, may_block);
    if (!may_block || !D9__ACTIVE() || s->loop) {
        /* s->loop: inside a callback, or a loop whose poll is not its park (libev's release
         * callback paid its own owed end before its poller) */
        if (__builtin_expect(s->end_owed, 0)) end_owed_alone(s);
        return false;
    }
    if (!s->worker_loop) take_generic_worker_once(runtime);
    int saved = errno;
    if (s->end_owed) {
        s->end_owed = false;
        d9__poll_end_park(); /* recording: tested above */
    } else {
        d9__park();
    }
    errno = saved;
    return true;
}

static void park_end(bool parked) {
    if (!parked) return;
    int saved = errno;
    d9_unpark();
    errno = saved;
}

static bool ts_nonzero(const struct timespec *ts) { return !ts || ts->tv_sec || ts->tv_nsec; }
static bool tv_nonzero(const struct timeval *tv) { return !tv || tv->tv_sec || tv->tv_usec; }

/* A thread outside any loop library: its poller may be a home-grown loop's
 * (preload_loop_work.c), whose iterations are then polls. */
static inline bool outside_loop_library(void) {
    const d9a_thread *s = &d9a_self;
    return !s->loop && !s->worker_loop && s->depth == 0;
}

static bool has_poll_fds(const struct pollfd *fds, nfds_t n) {
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].fd >= 0) return true;
    return false;
}

#define POLL_CALL(may_block, call)                                                         \
    do {                                                                                   \
        /* glibc declares poll's array write-only (an access attribute): gcc -Os would take   \
         * the program's array for uninitialized here; hide where the pointer comes from */ \
        const struct pollfd *fds_ = fds;                                                   \
        __asm__("" : "+r"(fds_));                                                          \
        bool loop_ = outside_loop_library() &&                                             \
                     d9p_loop_wait_begin(D9P_WAIT_POLL, -1, has_poll_fds(fds_, nfds),      \
                                         (may_block), __builtin_return_address(0));        \
        bool parked_ = park_begin(RT_POLL, (may_block));                                   \
        int rc_ = (call);                                                                  \
        if (!loop_) park_end(parked_); /* else with the loop's first wake, below */        \
        if (loop_) {                                                                       \
            int saved_ = errno;                                                            \
            d9p_loop_wait_end_poll(fds, nfds, rc_, parked_);                               \
            errno = saved_;                                                                \
        }                                                                                  \
        return rc_;                                                                        \
    } while (0)

#define SELECT_CALL(may_block, call)                                                       \
    do {                                                                                   \
        bool loop_ = outside_loop_library() &&                                             \
                     d9p_loop_wait_begin(D9P_WAIT_SELECT, -1, nfds > 0, (may_block),       \
                                         __builtin_return_address(0));                     \
        bool parked_ = park_begin(RT_SELECT, (may_block));                                 \
        int rc_ = (call);                                                                  \
        if (!loop_) park_end(parked_); /* else with the loop's first wake, below */        \
        if (loop_) {                                                                       \
            int saved_ = errno;                                                            \
            d9p_loop_wait_end_select(nfds, readfds, writefds, exceptfds, rc_, parked_);    \
            errno = saved_;                                                                \
        }                                                                                  \
        return rc_;                                                                        \
    } while (0)

/* An io_uring loop's own wait, once the thread is a loop of this process with its worker
 * identity (d9p_loop_io_now.home_ring1), takes the epoll loop's fused path: its iteration's end
 * with the park, without asking again for a child's start, a first wait, the fork generation
 * and the worker identity (the general path: 104 instructions a wait of the shim's own). */
bool d9p_poller_wait_begin(int kind, int fd, bool waits, bool blocks, const void *caller,
                           bool *home_loop) {
    if (kind == D9P_WAIT_URING && waits && d9p_loop_io_now.home_ring1 == (unsigned)fd + 1u &&
        D9__ACTIVE() && outside_loop_library()) {
        *home_loop = true;
        int saved = errno;
        if (!d9p_home_wait_begins(blocks) && blocks) d9__park();
        errno = saved;
        return blocks;
    }
    int runtime = kind == D9P_WAIT_URING ? RT_URING : RT_EPOLL;
    *home_loop = outside_loop_library() && d9p_loop_wait_begin(kind, fd, true, waits, caller);
    /* A loop's wait that finds its completions posted does not park (its first, when a client
     * was quicker than the loop), yet the iteration that follows is a poll of this worker's:
     * without the identity, its polls began on no worker and ended on the one the next park
     * took (test_preload_uring_loop.sh: a poll left open). */
    if (*home_loop && D9__ACTIVE()) take_generic_worker_once(runtime);
    bool parked = park_begin(runtime, blocks);
    /* parked outside a loop library: its worker identity is taken */
    if (kind == D9P_WAIT_URING && *home_loop && parked) d9p_loop_io_now.home_ring1 = (unsigned)fd + 1u;
    return parked;
}

void d9p_poller_wait_end(bool parked) { park_end(parked); }

/* The poll of a loop library's run function (libuv, libevent), outside its callbacks. */
static inline bool is_loop_poll(void) {
    const d9a_thread *s = &d9a_self;
    return s->loop && s->park_on_epoll && s->depth == 0;
}

/* epoll returned `rc` events, outside a loop library's poll: a home-grown loop's iteration
 * starts (preload_loop_work.c). */
static int epoll_returned_home(int rc, const struct epoll_event *events, bool parked) {
    int saved = errno;
    d9p_loop_wait_end_epoll(events, rc > 0 ? rc : 0, parked); /* the unpark with the first wake */
    errno = saved;
    return rc;
}

/* A forked child's start, when owed (d9p_maybe_start_child): only while nothing records, as
 * the recorder disables itself in a forked child until that start; whether it records now. */
static __attribute__((noinline, cold)) bool start_child_if_owed(void) {
    d9p_maybe_start_child();
    return D9__ACTIVE() != 0;
}

/* The poll of a loop library's run function (libuv, libevent) is the hot path of every
 * request: one look at the thread's state, errno's location asked once (glibc declares it
 * const, so the compiler keeps the pointer), and the recorder's park, unpark and readiness
 * wakes called from here rather than through three helpers that each saved registers and
 * errno (callgrind, per epoll_wait + read pair on the loop's thread: 236 instructions of the
 * shim's own before, test_preload_shim_instructions.sh bounds them). The poll of the loop's last
 * callback, owed since its return, ends with the park, in one hook (d9a_park_owing_end). What epoll returned is
 * a readiness wake of the tasks watching those fds (ready_wakes.h); a loop that wraps lazily
 * gets its trampolines here if recording started since it was entered (lazy_wrap.h: a
 * forked child's run starts inside this very call, a loop entered before the shim's start
 * gave up waiting). */
#define LOOP_EPOLL_CALL(may_block, call)                                                   \
    do {                                                                                   \
        bool active_ = D9__ACTIVE() != 0;                                                  \
        if (__builtin_expect(!active_, 0)) active_ = start_child_if_owed();                \
        int *err_ = &errno;                                                                \
        bool parked_ = (may_block) && active_;                                             \
        if (parked_) { /* with the poll the last callback owes */                          \
            int saved_ = *err_;                                                            \
            d9a_park_owing_end(true);                                                      \
            *err_ = saved_;                                                                \
        } else if (__builtin_expect(d9a_self.end_owed, 0)) { /* no park: the end alone */  \
            int saved_ = *err_;                                                            \
            d9a_park_owing_end(false);                                                     \
            *err_ = saved_;                                                                \
        }                                                                                  \
        int rc_ = (call);                                                                  \
        int saved_ = *err_;                                                                \
        d9a_poll_returned(parked_, events, rc_); /* unpark, lazy swap, ready wakes */      \
        *err_ = saved_;                                                                    \
        return rc_;                                                                        \
    } while (0)

/* A home-grown loop's own wait (redis' ae, nginx), once the thread is a loop of this process
 * with its worker identity (d9p_loop_io_now.home_epfd1): its iteration's end, park, unpark and
 * the next iteration's start in one pass, errno saved once. The general path below asks
 * again at every call whether a child's start is owed, whether this is the loop's first wait,
 * its fork generation, its worker identity, and saved errno three times: the wait with the
 * iteration's end and start 286 instructions of the shim's a redis GET, 212 so (callgrind,
 * bench/README.md). */
static inline bool home_fast(int epfd) {
    return d9p_loop_io_now.home_epfd1 == (unsigned)epfd + 1u && D9__ACTIVE() &&
           outside_loop_library();
}

#define HOME_EPOLL_CALL(may_block, call)                                                   \
    do {                                                                                   \
        int *err_ = &errno;                                                                \
        int saved_ = *err_;                                                                \
        bool parked_ = (may_block);                                                        \
        if (!d9p_home_wait_begins(parked_) && parked_) d9__park();                         \
        *err_ = saved_;                                                                    \
        int rc_ = (call);                                                                  \
        saved_ = *err_;                                                                    \
        d9p_home_wait_ends(events, rc_, parked_); /* the unpark with the first ready wake */ \
        *err_ = saved_;                                                                    \
        return rc_;                                                                        \
    } while (0)

/* The loop library's path and the general one stay in one function. Measured 2026-12-07
 * (callgrind, the shim's own instructions): each path a function of its own, the interposer a
 * frameless dispatcher that jumps to them (the general one given __builtin_return_address(0) as
 * an argument), took the loop's fused wait 240 -> 235.6 a request but the loop library's
 * epoll_wait + read pair 127.9 -> 138.5: that path's own function still saved six registers for
 * what lives across the real call and the inlined readiness wakes, and paid the dispatcher's
 * tests on top. The home-grown loop's fused path is the exception (caller: where the
 * interposer was called from, for a loop's name). */
#define EPOLL_CALL(may_block, call, caller)                                                \
    do {                                                                                   \
        if (__builtin_expect(is_loop_poll(), 1)) LOOP_EPOLL_CALL(may_block, call);         \
        bool home_loop_ = outside_loop_library() &&                                        \
                          d9p_loop_wait_begin(D9P_WAIT_EPOLL, epfd, false, (may_block),    \
                                              (caller));                                   \
        bool parked_ = park_begin(RT_EPOLL, (may_block));                                  \
        int rc_ = (call);                                                                  \
        if (!home_loop_) park_end(parked_);                                                \
        /* parked outside a loop library: its worker identity is taken */                  \
        if (home_loop_ && parked_) d9p_loop_io_now.home_epfd1 = (unsigned)epfd + 1u;       \
        return home_loop_ ? epoll_returned_home(rc_, events, parked_) : rc_;               \
    } while (0)

/* epoll_wait and epoll_pwait: a home-grown loop's own wait jumps to its fused path
 * (d9p_home_epoll_wait) before any frame of the interposer's: the interposer's frame of six
 * saved registers, which the other paths need, cost the loop's wait 44 of its 152 instructions
 * of the shim's own (callgrind, d9p_home_pairs; its halves inline in d9p_home_epoll_wait:
 * 239.4 -> 213.2 a request of test_preload_shim_instructions'); the loop library's wait pays the
 * test, the return address and a jump (epoll_wait + read 128.4 -> 132.5; its forked child's
 * start asked only while nothing records gives 2 of them back). */
D9P_RESOLVED_SLOT(int, epoll_wait, (int epfd, struct epoll_event *events, int maxevents, int timeout),
                  (epfd, events, maxevents, timeout));
D9P_RESOLVED_SLOT(int, epoll_pwait,
                  (int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *sigmask),
                  (epfd, events, maxevents, timeout, sigmask));

static __attribute__((noinline)) int epoll_wait_other(int epfd, struct epoll_event *events,
                                                      int maxevents, int timeout,
                                                      const void *caller) {
    EPOLL_CALL(timeout != 0, D9P_CALL_SLOT(epoll_wait)(epfd, events, maxevents, timeout), caller);
}

/* Without a frame of its own: __builtin_return_address(0) would otherwise set one up (a push,
 * a load and a pop on every loop library's wait) just to read the return address. */
#if defined(__GNUC__) && !defined(__clang__)
#define D9P_FRAMELESS __attribute__((optimize("omit-frame-pointer")))
#else
#define D9P_FRAMELESS
#endif
D9P_EXPORT D9P_FRAMELESS int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    if (__builtin_expect(home_fast(epfd), 0))
        return d9p_home_epoll_wait(epfd, events, maxevents, timeout, NULL, false);
    return epoll_wait_other(epfd, events, maxevents, timeout, __builtin_return_address(0));
}

static __attribute__((noinline)) int epoll_pwait_other(int epfd, struct epoll_event *events,
                                                       int maxevents, int timeout,
                                                       const sigset_t *sigmask, const void *caller) {
    EPOLL_CALL(timeout != 0, D9P_CALL_SLOT(epoll_pwait)(epfd, events, maxevents, timeout, sigmask), caller);
}

D9P_EXPORT D9P_FRAMELESS int epoll_pwait(int epfd, struct epoll_event *events, int maxevents,
                                         int timeout, const sigset_t *sigmask) {
    if (__builtin_expect(home_fast(epfd), 0))
        return d9p_home_epoll_wait(epfd, events, maxevents, timeout, sigmask, true);
    return epoll_pwait_other(epfd, events, maxevents, timeout, sigmask, __builtin_return_address(0));
}

/* glibc 2.35+; declared here so the shim also builds against older headers */
int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
                 const struct timespec *timeout, const sigset_t *sigmask);

/* epoll_pwait2's fused path (rare: its own function, the halves called) */
static __attribute__((noinline)) int home_pwait2(__typeof__(&epoll_pwait2) real, int epfd,
                                                 struct epoll_event *events, int maxevents,
                                                 const struct timespec *timeout,
                                                 const sigset_t *sigmask) {
    HOME_EPOLL_CALL(ts_nonzero(timeout), real(epfd, events, maxevents, timeout, sigmask));
}

D9P_EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
                            const struct timespec *timeout, const sigset_t *sigmask) {
    __typeof__(&epoll_pwait2) real = D9P_NEXT(epoll_pwait2);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (__builtin_expect(home_fast(epfd), 0))
        return home_pwait2(real, epfd, events, maxevents, timeout, sigmask);
    EPOLL_CALL(ts_nonzero(timeout), real(epfd, events, maxevents, timeout, sigmask),
               __builtin_return_address(0));
}

/* libc's pollers: called on every wait of a loop that polls (D9P_RESOLVED_SLOT: no test a call) */
D9P_RESOLVED_SLOT(int, poll, (struct pollfd *fds, nfds_t nfds, int timeout), (fds, nfds, timeout));
D9P_RESOLVED_SLOT(int, ppoll,
                  (struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask),
                  (fds, nfds, timeout, sigmask));
D9P_RESOLVED_SLOT(int, select,
                  (int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout),
                  (nfds, readfds, writefds, exceptfds, timeout));
D9P_RESOLVED_SLOT(int, pselect,
                  (int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                   const struct timespec *timeout, const sigset_t *sigmask),
                  (nfds, readfds, writefds, exceptfds, timeout, sigmask));

D9P_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
    POLL_CALL(timeout != 0, D9P_CALL_SLOT(poll)(fds, nfds, timeout));
}

D9P_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
                     const sigset_t *sigmask) {
    POLL_CALL(ts_nonzero(timeout), D9P_CALL_SLOT(ppoll)(fds, nfds, timeout, sigmask));
}

/* What programs built with _FORTIFY_SOURCE call instead of poll / ppoll. */
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
                const sigset_t *sigmask, size_t fdslen);

D9P_RESOLVED_SLOT(int, __poll_chk, (struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen),
                  (fds, nfds, timeout, fdslen));
D9P_RESOLVED_SLOT(int, __ppoll_chk,
                  (struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
                   const sigset_t *sigmask, size_t fdslen),
                  (fds, nfds, timeout, sigmask, fdslen));

D9P_EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen) {
    POLL_CALL(timeout != 0, D9P_CALL_SLOT(__poll_chk)(fds, nfds, timeout, fdslen));
}

D9P_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
                           const sigset_t *sigmask, size_t fdslen) {
    POLL_CALL(ts_nonzero(timeout),
                D9P_CALL_SLOT(__ppoll_chk)(fds, nfds, timeout, sigmask, fdslen));
}

D9P_EXPORT int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                      struct timeval *timeout) {
    SELECT_CALL(tv_nonzero(timeout),
                D9P_CALL_SLOT(select)(nfds, readfds, writefds, exceptfds, timeout));
}

D9P_EXPORT int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                       const struct timespec *timeout, const sigset_t *sigmask) {
    SELECT_CALL(ts_nonzero(timeout),
                D9P_CALL_SLOT(pselect)(nfds, readfds, writefds, exceptfds, timeout, sigmask));
}
