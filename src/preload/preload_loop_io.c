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

D9P_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
    d9p_loop_io(fd);
    return D9P_NEXT(recv)(fd, buf, n, flags);
}

D9P_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
                            socklen_t *len) {
    d9p_loop_io(fd);
    return D9P_NEXT(recvfrom)(fd, buf, n, flags, addr, len);
}

D9P_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
    d9p_loop_io(fd);
    return D9P_NEXT(recvmsg)(fd, msg, flags);
}

D9P_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
    d9p_loop_io(fd);
    return D9P_NEXT(send)(fd, buf, n, flags);
}

D9P_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                          const struct sockaddr *addr, socklen_t len) {
    d9p_loop_io(fd);
    return D9P_NEXT(sendto)(fd, buf, n, flags, addr, len);
}

D9P_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    d9p_loop_io(fd);
    return D9P_NEXT(sendmsg)(fd, msg, flags);
}

D9P_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n) {
    d9p_loop_io(fd);
    return D9P_NEXT(readv)(fd, iov, n);
}

D9P_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
    d9p_loop_io(fd);
    return D9P_NEXT(writev)(fd, iov, n);
}

D9P_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
    d9p_loop_io(out_fd);
    return D9P_NEXT(sendfile)(out_fd, in_fd, offset, count);
}

D9P_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count) {
    d9p_loop_io(out_fd);
    return D9P_NEXT(sendfile64)(out_fd, in_fd, offset, count);
}
