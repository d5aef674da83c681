/* For test_mt_ring_move_in_interceptor: an epoll_wait that runs the test's code first, in a
 * shared library after libtsan, so that a call of epoll_wait goes through TSan's interceptor,
 * which calls this as the "real" function inside its blocking-call state, as it calls the
 * adapters' epoll_wait wrapper (src/adapters/common/epoll_park.c) in a TSan build. */
#include <dlfcn.h>
#include <stddef.h>
#include <sys/epoll.h>

#include "unit/blocking_call_interposer.h"

void (*d9t_inside_epoll_wait)(void);

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    static int (*next)(int, struct epoll_event *, int, int);
    if (!next) next = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
    void (*inside)(void) = d9t_inside_epoll_wait;
    if (inside) inside();
    return next(epfd, events, maxevents, timeout);
}
