/* A small home-grown event loop server, no loop library, and its client on a thread that
 * never polls: what test_preload_home_loop.sh records under the shim.
 *
 *   d9p_loop_server epoll|pwait2|poll|fork|static|split
 *
 * The loop (run_loop) waits with epoll_wait (epoll_pwait2 in mode pwait2, poll in mode
 * poll; fork: two forked worker processes, each with a client of its own and listening on a
 * port of its own; static: epoll_wait called from a static function, which the program does
 * not export, to name the loop from the symbol table; split: epoll_wait called from the static
 * body of a function the program exports, whose exported entry only jumps there, as GCC's
 * partial inlining leaves redis' aeProcessEvents) and answers one line per readiness: "fast" at once, "slow" after sleeping
 * 200 ms inside the handler, "bye" by closing the connection. The client runs, one request
 * at a time (each waits for its answer):
 *   connection A: fast x5, then B: fast, slow, fast, then A: bye (A's fd is closed),
 *   then C (accepted on A's old fd number): fast x3, bye; then B: bye.
 * The server prints what the test needs to find in the trace, one fact per line:
 *   accepted <conn> <fd> | requests <conn> <n> | slow <conn> | done
 * (C was accepted on A's old fd number when their "accepted" lines show the same fd). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait_for_recorder.h"

enum { MODE_EPOLL, MODE_PWAIT2, MODE_POLL, MODE_STATIC, MODE_SPLIT };
static int g_mode;
static int g_listen;
static int g_port;

int epoll_pwait2(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);

/* ---------------------------------------------------------------- the server */

#define MAX_CONN 8
static int g_conn_fd[MAX_CONN];
static char g_conn_name[MAX_CONN];
static int g_requests[MAX_CONN];
static int g_accepted;
static int g_open;

static int conn_of(int fd) {
    for (int i = 0; i < g_accepted; i++)
        if (g_conn_fd[i] == fd) return i;
    return -1;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* One readiness of fd: accept a connection, or answer one request. */
static void handle(int epfd, int fd) {
    if (fd == g_listen) {
        int c = g_mode == MODE_POLL ? accept(g_listen, NULL, NULL)
                                    : accept4(g_listen, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) return;
        /* the client names its connections in its first byte-free way: by order */
        int k = g_accepted++;
        g_conn_fd[k] = c;
        g_conn_name[k] = (char)('A' + k);
        printf("accepted %c %d\n", g_conn_name[k], c);
        g_open++;
        if (epfd >= 0) {
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = c};
            epoll_ctl(epfd, EPOLL_CTL_ADD, c, &ev);
        }
        return;
    }
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int k = conn_of(fd);
    if (n <= 0 || k < 0) {
        close(fd);
        return;
    }
    buf[n] = 0;
    g_requests[k]++;
    if (!strncmp(buf, "slow", 4)) {
        printf("slow %c\n", g_conn_name[k]);
        sleep_ms(200);
    }
    if (!strncmp(buf, "bye", 3)) {
        printf("requests %c %d\n", g_conn_name[k], g_requests[k]);
        if (write(fd, "ok\n", 3) != 3) perror("write");
        if (epfd >= 0) epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
        close(fd);
        g_conn_fd[k] = -1;
        g_open--;
        return;
    }
    if (write(fd, "ok\n", 3) != 3) perror("write");
}

/* Not exported: the loop's name from .symtab, or, stripped, its nearest exported caller's. */
__attribute__((noinline)) static int wait_for_events(int epfd, struct epoll_event *evs, int n) {
    int rc = epoll_wait(epfd, evs, n, -1);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays the caller */
    return rc;
}

/* GCC's split of an exported function: its body static (as "f.part.0"), called directly by
 * the program (redis' aeMain calls aeProcessEvents.part.0), and the exported f a jump to it
 * (x86-64: the shim reads that jump; elsewhere the mode says it is not run). */
#if defined(__x86_64__)
__attribute__((noinline, used)) static int wait_split(int epfd, struct epoll_event *evs, int n) __asm__("wait_split_body.part.0");
__attribute__((noinline, used)) static int wait_split(int epfd, struct epoll_event *evs, int n) {
    int rc = epoll_wait(epfd, evs, n, -1);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays the caller */
    return rc;
}
__asm__(".globl wait_split_body\n"
        ".type wait_split_body, @function\n"
        "wait_split_body:\n"
        "    jmp wait_split_body.part.0\n"
        ".size wait_split_body, .-wait_split_body\n");
#else
static int wait_split(int epfd, struct epoll_event *evs, int n) {
    (void)epfd, (void)evs, (void)n;
    printf("no split mode on this architecture\n");
    exit(3);
}
#endif

/* Exported (the program links with -rdynamic): the loop's name in the trace. */
void run_loop(int connections);
__attribute__((noinline, visibility("default"))) void run_loop(int connections) {
    if (g_mode == MODE_POLL) {
        while (g_accepted < connections || g_open > 0) {
            struct pollfd fds[MAX_CONN + 1];
            int map[MAX_CONN + 1], n = 0;
            fds[n] = (struct pollfd){.fd = g_listen, .events = POLLIN};
            map[n++] = g_listen;
            for (int i = 0; i < g_accepted; i++)
                if (g_conn_fd[i] >= 0) {
                    fds[n] = (struct pollfd){.fd = g_conn_fd[i], .events = POLLIN};
                    map[n++] = g_conn_fd[i];
                }
            int rc = poll(fds, (nfds_t)n, -1);
            for (int i = 0; rc > 0 && i < n; i++)
                if (fds[i].revents) handle(-1, map[i]);
        }
        return;
    }
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = g_listen};
    epoll_ctl(epfd, EPOLL_CTL_ADD, g_listen, &ev);
    while (g_accepted < connections || g_open > 0) {
        struct epoll_event evs[16];
        int rc = g_mode == MODE_PWAIT2   ? epoll_pwait2(epfd, evs, 16, NULL, NULL)
                 : g_mode == MODE_STATIC ? wait_for_events(epfd, evs, 16)
                 : g_mode == MODE_SPLIT  ? wait_split(epfd, evs, 16)
                                         : epoll_wait(epfd, evs, 16, -1);
        if (rc < 0 && errno == ENOSYS) {
            printf("no epoll_pwait2\n");
            exit(3);
        }
        for (int i = 0; i < rc; i++) handle(epfd, evs[i].data.fd);
    }
    close(epfd);
}

/* ---------------------------------------------------------------- the client */

static int dial(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(1);
    }
    return s;
}

static void ask(int s, const char *what) {
    char buf[8];
    size_t len = strlen(what);
    if (send(s, what, len, 0) != (ssize_t)len) exit(1);
    size_t got = 0;
    while (got < 3) { /* "ok\n" */
        ssize_t n = recv(s, buf + got, 3 - got, 0);
        if (n <= 0) exit(1);
        got += (size_t)n;
    }
}

static void *client(void *arg) {
    (void)arg;
    int a = dial();
    for (int i = 0; i < 5; i++) ask(a, "fast");
    int b = dial();
    ask(b, "fast");
    ask(b, "slow");
    ask(b, "fast");
    ask(a, "bye");
    close(a);
    int c = dial();
    for (int i = 0; i < 3; i++) ask(c, "fast");
    ask(c, "bye");
    close(c);
    ask(b, "bye");
    close(b);
    return NULL;
}

static void listen_loopback(void) {
    g_listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(g_listen, (struct sockaddr *)&a, sizeof a) != 0 || listen(g_listen, 16) != 0 ||
        getsockname(g_listen, (struct sockaddr *)&a, &len) != 0) {
        perror("listen");
        exit(1);
    }
    g_port = ntohs(a.sin_port);
}

static void serve_one_client(void) {
    pthread_t t;
    pthread_create(&t, NULL, client, NULL);
    run_loop(3);
    pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "epoll";
    g_mode = !strcmp(mode, "pwait2")   ? MODE_PWAIT2
             : !strcmp(mode, "poll")   ? MODE_POLL
             : !strcmp(mode, "static") ? MODE_STATIC
             : !strcmp(mode, "split")  ? MODE_SPLIT
                                       : MODE_EPOLL;
    d9p_wait_for_recorder();
    if (strcmp(mode, "fork") != 0) {
        listen_loopback();
        serve_one_client();
        printf("done\n");
        return 0;
    }
    /* nginx's shape: the master listens, forks workers that each run the loop */
    for (int w = 0; w < 2; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            listen_loopback();
            serve_one_client();
            printf("worker %d done\n", (int)getpid());
            return 0;
        }
    }
    int status, failed = 0;
    while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    printf("done\n");
    return failed;
}
