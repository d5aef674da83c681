/* A master that forks a worker process which takes an unprivileged identity before its loop
 * runs, as nginx's workers do under `user www-data;`: the worker calls setgid and setuid(UID),
 * then runs an epoll loop (no loop library) on a pipe the master writes N bytes to, then 'q'.
 * Run as root under `dial9 run` (test_preload_privdrop.sh): the worker's run must exist, be
 * UID's and hold its polls. Never links dial9: the shim is what is under test.
 *
 *   d9p_fork_privdrop UID N */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

static int worker(int fd, uid_t uid) {
    if (setgid(uid) != 0 || setuid(uid) != 0) {
        perror("d9p_fork_privdrop: setgid/setuid");
        return 3;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) return 2;
    for (;;) {
        if (epoll_wait(ep, &ev, 1, -1) != 1) return 2;
        char buf[64];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) return 2;
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == 'q') {
                printf("d9p_fork_privdrop: worker ran as uid %d\n", (int)geteuid());
                return 0;
            }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: d9p_fork_privdrop UID N\n");
        return 2;
    }
    uid_t uid = (uid_t)atol(argv[1]);
    long n = atol(argv[2]);
    int p[2];
    if (pipe(p) != 0) return 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        close(p[1]);
        exit(worker(p[0], uid));
    }
    close(p[0]);
    for (long i = 0; i < n; i++)
        if (write(p[1], "x", 1) != 1) return 4;
    if (write(p[1], "q", 1) != 1) return 4;
    int status;
    if (waitpid(pid, &status, 0) != pid) return 4;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}
