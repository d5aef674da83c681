/* Park / unpark exactly around the loop's blocking poll, for loops without a hook there
 * (libuv 1.44 and libevent 2.1 call epoll_wait / epoll_pwait through the PLT). The run
 * wrappers (uv_run, event_base_loop) mark the thread; a call from inside a callback is not
 * the loop's poll, and one that cannot block (timeout 0) is no park. Whatever the loop's poll
 * returns ready is a readiness wake of the tasks watching those fds (ready_wakes.h). A loop
 * that wraps lazily swaps its trampolines here when recording started or stopped, before the
 * loop dispatches what the poll returned (lazy_wrap.h).
 *
 * While nothing records, the loop's poll is the call and a test after it (did recording start
 * meanwhile): the rest is out of line. */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>

#include "lazy_wrap.h"
#include "poll_returned.h"
#include "ready_wakes.h"
#include "real_symbol.h"
#include "thread_state.h"

static inline bool is_loop_poll(void) {
    const d9a_thread *s = &d9a_self;
    return s->park_on_epoll && s->depth == 0;
}

/* Recording started while the loop's poll waited: the lazy swap, then the readiness wakes of
 * what the poll returned. */
static __attribute__((noinline)) void after_idle_poll(const struct epoll_event *events, int rc) {
    int saved = errno;
    d9a_lazy_check();
    if (rc > 0 && D9__ACTIVE()) d9a_fd_ready(events, rc);
    errno = saved;
}

/* Nothing records and the loop's objects hold no trampolines (only this thread, the loop's,
 * changes that flag). */
static inline bool idle(void) {
    if (D9__ACTIVE()) return false;
    _Atomic bool *w = d9a_self.lazy_wrapped;
    return !w || !atomic_load_explicit(w, memory_order_relaxed);
}

/* Wrapper `name` of the loop's poll (`args`: its parameters' names). Each path is a function of its own, so that the wrapper itself is a few
 * tests and a jump, without a stack frame. */
#define LOOP_POLL_WRAPPER(name, params, args)                                              \
    D9A_NEXT_DEFINE(int, name, params, args)                                               \
    static __attribute__((noinline)) int recorded_##name params {                          \
        bool park = timeout != 0 && D9__ACTIVE();                                          \
        int saved = errno;                                                                 \
        d9a_park_owing_end(park); /* with the poll the last callback owes */               \
        errno = saved;                                                                     \
        int rc = D9A_NEXT(name, args);                                                     \
        saved = errno;                                                                     \
        d9a_poll_returned(park, events, rc); /* unpark, lazy swap, ready wakes */          \
        errno = saved;                                                                     \
        return rc;                                                                         \
    }                                                                                      \
    static __attribute__((noinline)) int idle_##name params {                              \
        int rc = D9A_NEXT(name, args);                                                     \
        if (D9__ACTIVE()) after_idle_poll(events, rc);                                     \
        return rc;                                                                         \
    }                                                                                      \
    D9A_EXPORT int name params {                                                           \
        if (!is_loop_poll()) return D9A_NEXT(name, args);                                  \
        if (idle() && !(d9a_self.end_owed | d9a_self.unpark_owed)) return idle_##name args; \
        return recorded_##name args;                                                       \
    }

LOOP_POLL_WRAPPER(epoll_wait, (int epfd, struct epoll_event *events, int maxevents, int timeout),
                  (epfd, events, maxevents, timeout))

LOOP_POLL_WRAPPER(epoll_pwait,
                  (int epfd, struct epoll_event *events, int maxevents, int timeout,
                   const sigset_t *sigmask),
                  (epfd, events, maxevents, timeout, sigmask))
