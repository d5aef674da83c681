/* Park / unpark exactly around the loop's blocking poll, for loops without a hook there
 * (libuv 1.44 and libevent 2.1 call epoll_wait / epoll_pwait through the PLT). The run
 * wrappers (uv_run, event_base_loop) mark the thread; a call from inside a callback, or one
 * that cannot block (timeout 0), is not a park. */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>

#include "real_symbol.h"
#include "thread_state.h"

static inline bool is_park(int timeout) {
    const d9a_thread *s = &d9a_self;
    return s->park_on_epoll && s->depth == 0 && timeout != 0;
}

D9A_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    if (!is_park(timeout)) return D9A_REAL(epoll_wait)(epfd, events, maxevents, timeout);
    int saved = errno;
    d9_park();
    errno = saved;
    int rc = D9A_REAL(epoll_wait)(epfd, events, maxevents, timeout);
    saved = errno;
    d9_unpark();
    errno = saved;
    return rc;
}

D9A_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                           const sigset_t *sigmask) {
    if (!is_park(timeout)) return D9A_REAL(epoll_pwait)(epfd, events, maxevents, timeout, sigmask);
    int saved = errno;
    d9_park();
    errno = saved;
    int rc = D9A_REAL(epoll_pwait)(epfd, events, maxevents, timeout, sigmask);
    saved = errno;
    d9_unpark();
    errno = saved;
    return rc;
}
