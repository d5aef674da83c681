/* Readiness wakes: which task's callback the readiness of an fd runs, so that when the loop's
 * poller returns ready fds, each ready task gets a wake by the poller (waker 0), stamped when
 * the poller returned. dial9 pairs a poll with the latest wake of its task before it: without
 * these, an I/O callback's wake-to-poll delay would be measured from some stale wake.
 *
 * Per direction (readable, writable) one task per fd: the fd's handle (libuv), event
 * (libevent) or bufferevent / listener. Fds from D9A_FD_MAX up are not followed. */
#ifndef D9_ADAPTERS_READY_WAKES_H
#define D9_ADAPTERS_READY_WAKES_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "dial9/dial9.h"
#include "real_symbol.h"

#define D9A_FD_MAX 65536
enum { D9A_FD_IN = 1, D9A_FD_OUT = 2 };

D9A_HIDDEN extern _Atomic uint64_t d9a_fd_task[D9A_FD_MAX][2];

/* Task `task` runs a callback when `fd` is ready in directions `dirs` (D9A_FD_IN / OUT). */
D9A_HIDDEN void d9a_fd_watch(int fd, unsigned dirs, uint64_t task);
/* `fd` no longer runs callbacks of `task` (another task may have taken it meanwhile). */
D9A_HIDDEN void d9a_fd_unwatch(int fd, uint64_t task);

/* What d9a_fd_ready wakes for event `ev`: the readable side's task, then the writable side's
 * when it is another (0: none). */
static inline void d9a_fd_ready_tasks(const struct epoll_event *ev, uint64_t *in, uint64_t *out) {
    *in = *out = 0;
    uint32_t fd = (uint32_t)ev->data.u64;
    if (fd >= D9A_FD_MAX) return;
    uint32_t what = ev->events;
    if (what & (EPOLLIN | EPOLLPRI | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
        *in = atomic_load_explicit(&d9a_fd_task[fd][0], memory_order_relaxed);
    if (what & (EPOLLOUT | EPOLLERR | EPOLLHUP))
        *out = atomic_load_explicit(&d9a_fd_task[fd][1], memory_order_relaxed);
    if (*out == *in) *out = 0;
}

/* The poller returned `n` events whose data holds the fd in its low 32 bits (libuv and
 * libevent store data.fd): a wake of each watching task. Called on the loop's thread outside
 * any callback; costs a load per event, and a record per ready task. */
static inline void d9a_fd_ready(const struct epoll_event *ev, int n) {
    for (int i = 0; i < n; i++) {
        uint64_t in, out;
        d9a_fd_ready_tasks(&ev[i], &in, &out);
        if (in) d9_wake_ready(in);
        if (out) d9_wake_ready(out);
    }
}

#endif
