/* The calls that tell a home-grown loop's work apart per connection (preload_loop_work.c):
 * accept / accept4 / socket begin a connection's task, the first read, write, recv, send...
 * on a connection inside a loop iteration starts its poll, epoll_ctl says which fds a loop
 * watches (and whether its event data is the fd). read, write and close are interposed in
 * preload_fd_wakes.c and preload_fds.c, which call the same hooks.
 * Outside a loop iteration each of these costs one thread-local load and a branch. */
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "preload.h"

D9P_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    d9p_loop_io(fd);
    int rc = D9P_NEXT(accept)(fd, addr, len);
    if (rc >= 0) d9p_conn_accepted(fd, rc);
    return rc;
}

D9P_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    d9p_loop_io(fd);
    int rc = D9P_NEXT(accept4)(fd, addr, len, flags);
    if (rc >= 0) d9p_conn_accepted(fd, rc);
    return rc;
}

D9P_EXPORT int socket(int domain, int type, int protocol) {
    int rc = D9P_NEXT(socket)(domain, type, protocol);
    if (rc >= 0) d9p_conn_created(rc);
    return rc;
}

D9P_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
    int rc = D9P_NEXT(epoll_ctl)(epfd, op, fd, ev);
    if (rc == 0) d9p_epoll_ctl_seen(epfd, op, fd, ev);
    return rc;
}

D9P_IO_PASS(ssize_t, recv, fd, (int fd, void *buf, size_t n, int flags),
            (fd, buf, n, flags));

D9P_IO_PASS(ssize_t, recvfrom, fd, (int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *len),
            (fd, buf, n, flags, addr, len));

D9P_IO_PASS(ssize_t, recvmsg, fd, (int fd, struct msghdr *msg, int flags),
            (fd, msg, flags));

D9P_IO_PASS(ssize_t, send, fd, (int fd, const void *buf, size_t n, int flags),
            (fd, buf, n, flags));

D9P_IO_PASS(ssize_t, sendto, fd, (int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t len),
            (fd, buf, n, flags, addr, len));

D9P_IO_PASS(ssize_t, sendmsg, fd, (int fd, const struct msghdr *msg, int flags),
            (fd, msg, flags));

D9P_IO_PASS(ssize_t, readv, fd, (int fd, const struct iovec *iov, int n),
            (fd, iov, n));

D9P_IO_PASS(ssize_t, writev, fd, (int fd, const struct iovec *iov, int n),
            (fd, iov, n));

D9P_IO_PASS(ssize_t, sendfile, out_fd, (int out_fd, int in_fd, off_t *offset, size_t count),
            (out_fd, in_fd, offset, count));

D9P_IO_PASS(ssize_t, sendfile64, out_fd, (int out_fd, int in_fd, off64_t *offset, size_t count),
            (out_fd, in_fd, offset, count));
