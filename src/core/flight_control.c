/* The control socket (flight_control.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/flight_control.h"

#include <errno.h>
#include <sys/time.h>
#include <unistd.h>

int d9_control_listen(void) {
    struct sockaddr_un addr;
    socklen_t len;
    d9_control_address(getpid(), &addr, &len);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&addr, len) != 0 || listen(fd, 8) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int d9_control_accept(int listen_fd, bool *allowed, unsigned *peer_uid) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) return -1;
    struct ucred cred;
    socklen_t clen = sizeof cred;
    /* the kernel's word on who connected: never what the client says */
    bool known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && clen == sizeof cred;
    *peer_uid = known ? (unsigned)cred.uid : (unsigned)-1;
    *allowed = known && (cred.uid == 0 || cred.uid == geteuid());
    /* a client that connects and says nothing holds the flight thread this long at most */
    struct timeval tv = {.tv_sec = 2};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

bool d9_control_read_line(int fd, char *line, size_t len) {
    size_t used = 0;
    while (used + 1 < len) {
        ssize_t n = recv(fd, line + used, len - 1 - used, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
        if (memchr(line, '\n', used)) break;
    }
    line[used] = 0;
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    return used > 0;
}

void d9_control_reply(int fd, const char *line) {
    if (fd < 0) return;
    size_t len = strlen(line), done = 0;
    while (done < len) {
        ssize_t n = send(fd, line + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
    }
    close(fd);
}
