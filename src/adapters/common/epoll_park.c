/* Park / unpark exactly around the loop's blocking poll, for loops without a hook there
 * (libuv 1.44 and libevent 2.1 call epoll_wait / epoll_pwait through the PLT). The run
 * wrappers (uv_run, event_base_loop) mark the thread; a call from inside a callback is not
 * the loop's poll, and one that cannot block (timeout 0) is no park. Whatever the loop's poll
 * returns ready is a readiness wake of the tasks watching those fds (ready_wakes.h). */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>

#include "ready_wakes.h"
#include "real_symbol.h"
#include "thread_state.h"

static inline bool is_loop_poll(void) {
    const d9a_thread *s = &d9a_self;
    return s->park_on_epoll && s->depth == 0;
}

#define LOOP_POLL(call, timeout)                                                           \
    do {                                                                                   \
        bool park = (timeout) != 0 && D9__ACTIVE();                                        \
        int saved = errno;                                                                 \
        if (park) d9_park();                                                               \
        errno = saved;                                                                     \
        int rc = (call);                                                                   \
        saved = errno;                                                                     \
        if (park) d9_unpark();                                                             \
        if (rc > 0 && D9__ACTIVE()) d9a_fd_ready(events, rc);                              \
        errno = saved;                                                                     \
        return rc;                                                                         \
    } while (0)

D9A_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    if (!is_loop_poll()) return D9A_REAL(epoll_wait)(epfd, events, maxevents, timeout);
    LOOP_POLL(D9A_REAL(epoll_wait)(epfd, events, maxevents, timeout), timeout);
}

D9A_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                           const sigset_t *sigmask) {
    if (!is_loop_poll()) return D9A_REAL(epoll_pwait)(epfd, events, maxevents, timeout, sigmask);
    LOOP_POLL(D9A_REAL(epoll_pwait)(epfd, events, maxevents, timeout, sigmask), timeout);
}
