/* A small io_uring echo-style server on liburing (shared, as Debian ships it), no loop
 * library, and its client on a thread that never waits on a ring: what
 * test_preload_uring_loop.sh records under the shim.
 *
 *   d9p_uring_server batch|wait_cqe|timeout|enter
 *
 * The loop (run_loop) accepts and receives through the ring (IORING_OP_ACCEPT, IORING_OP_RECV)
 * and answers each request with write(): "fast" at once, "slow" after sleeping 200 ms in the
 * handler, "bye" by answering and closing the connection (A and B with close(), C through the
 * ring, IORING_OP_CLOSE). Mode batch waits with io_uring_submit_and_wait and handles every
 * completion posted; mode wait_cqe submits with io_uring_submit and waits with
 * io_uring_wait_cqe, one completion at a time; mode timeout the same with
 * io_uring_wait_cqe_timeout (10 s), which liburing implements by calling its own exported
 * io_uring_wait_cqes and __io_uring_get_cqe: waits inside a wait; mode enter submits with
 * io_uring_submit and waits with liburing's io_uring_enter wrapper (IORING_ENTER_GETEVENTS,
 * min_complete 1), then peeks: a wait without a struct io_uring. The client runs one request at a time (each
 * waits for its answer):
 *   A: fast x3, bye; B: fast, slow; C: fast x2, bye (then it waits for C's end of file);
 *   B: fast, bye.
 * The client's first request (A's) is sent before the loop starts: the loop's first waits find
 * their completions already posted. B's slow request is sent once the loop is blocked in its
 * wait: it starts an iteration of its own in every mode.
 * The server prints one fact per line: accepted <conn> <fd> | requests <conn> <n> | done.
 * It exits with status 3, saying "no io_uring: <why>", when the kernel refuses a ring. */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wait_for_recorder.h"

enum { MODE_BATCH, MODE_WAIT_CQE, MODE_TIMEOUT, MODE_ENTER };
static int g_mode;
static int g_listen, g_port;
static pid_t g_loop_tid; /* the thread that runs the loop (main's) */
static struct io_uring g_ring;

/* ---------------------------------------------------------------- the server */

#define MAX_CONN 4
enum { OP_ACCEPT, OP_RECV, OP_CLOSE };
static struct conn {
    int fd;
    char name;
    int requests;
    char buf[64];
} g_conn[MAX_CONN];
static int g_accepted, g_closed;

/* user_data: the operation in the high half, the connection's index in the low one */
static uint64_t tag(int op, int k) { return (uint64_t)op << 32 | (uint32_t)k; }

static struct io_uring_sqe *sqe(void) {
    struct io_uring_sqe *s = io_uring_get_sqe(&g_ring);
    if (!s) {
        fprintf(stderr, "submission queue full\n");
        exit(1);
    }
    return s;
}

static void want_accept(void) {
    struct io_uring_sqe *s = sqe();
    io_uring_prep_accept(s, g_listen, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, tag(OP_ACCEPT, 0));
}

static void want_recv(int k) {
    struct io_uring_sqe *s = sqe();
    io_uring_prep_recv(s, g_conn[k].fd, g_conn[k].buf, sizeof g_conn[k].buf - 1, 0);
    io_uring_sqe_set_data64(s, tag(OP_RECV, k));
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void answer(int k) {
    if (write(g_conn[k].fd, "ok\n", 3) != 3) perror("write");
}

static void handle(const struct io_uring_cqe *cqe) {
    int op = (int)(cqe->user_data >> 32), k = (int)(uint32_t)cqe->user_data;
    if (op == OP_ACCEPT) {
        if (cqe->res < 0 || g_accepted == MAX_CONN) {
            fprintf(stderr, "accept: %s\n", strerror(-cqe->res));
            exit(1);
        }
        k = g_accepted++;
        g_conn[k] = (struct conn){.fd = cqe->res, .name = (char)('A' + k)};
        printf("accepted %c %d\n", g_conn[k].name, cqe->res);
        want_recv(k);
        if (g_accepted < 3) want_accept();
        return;
    }
    if (op == OP_CLOSE) {
        g_closed++;
        return;
    }
    struct conn *c = &g_conn[k];
    if (cqe->res <= 0) {
        fprintf(stderr, "recv %c: %d\n", c->name, cqe->res);
        exit(1);
    }
    c->buf[cqe->res] = 0;
    c->requests++;
    if (!strncmp(c->buf, "slow", 4)) sleep_ms(200);
    answer(k);
    if (strncmp(c->buf, "bye", 3) != 0) {
        want_recv(k);
        return;
    }
    printf("requests %c %d\n", c->name, c->requests);
    if (c->name == 'C') { /* through the ring: its task ends at the close's completion */
        struct io_uring_sqe *s = sqe();
        io_uring_prep_close(s, c->fd);
        io_uring_sqe_set_data64(s, tag(OP_CLOSE, k));
    } else {
        close(c->fd);
        g_closed++;
    }
}

/* Exported (the program links with -rdynamic): the loop's name in the trace. */
void run_loop(void);
__attribute__((noinline, visibility("default"))) void run_loop(void) {
    want_accept();
    while (g_closed < 3) {
        if (g_mode == MODE_BATCH) {
            int rc = io_uring_submit_and_wait(&g_ring, 1);
            if (rc < 0 && rc != -EINTR) {
                fprintf(stderr, "io_uring_submit_and_wait: %s\n", strerror(-rc));
                exit(1);
            }
            unsigned head, n = 0;
            struct io_uring_cqe *cqe;
            io_uring_for_each_cqe(&g_ring, head, cqe) {
                handle(cqe);
                n++;
            }
            io_uring_cq_advance(&g_ring, n);
        } else {
            io_uring_submit(&g_ring);
            struct io_uring_cqe *cqe;
            struct __kernel_timespec ts = {.tv_sec = 10};
            int rc;
            if (g_mode == MODE_ENTER) {
                while ((rc = io_uring_peek_cqe(&g_ring, &cqe)) == -EAGAIN) {
                    rc = io_uring_enter((unsigned)g_ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL);
                    if (rc < 0 && rc != -EINTR) {
                        fprintf(stderr, "io_uring_enter: %s\n", strerror(-rc));
                        exit(1);
                    }
                }
            } else {
                rc = g_mode == MODE_TIMEOUT ? io_uring_wait_cqe_timeout(&g_ring, &cqe, &ts)
                                            : io_uring_wait_cqe(&g_ring, &cqe);
            }
            if (rc < 0) {
                if (rc == -EINTR || rc == -ETIME) continue;
                fprintf(stderr, "io_uring_wait_cqe: %s\n", strerror(-rc));
                exit(1);
            }
            handle(cqe);
            io_uring_cqe_seen(&g_ring, cqe);
        }
    }
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

static void request(int s, const char *what) {
    size_t len = strlen(what);
    if (send(s, what, len, 0) != (ssize_t)len) exit(1);
}

static void await_answer(int s) {
    char buf[8];
    size_t got = 0;
    while (got < 3) { /* "ok\n" */
        ssize_t n = recv(s, buf + got, 3 - got, 0);
        if (n <= 0) exit(1);
        got += (size_t)n;
    }
}

static void ask(int s, const char *what) {
    request(s, what);
    await_answer(s);
}

/* Until the loop's thread is blocked in its wait (io_uring_enter asking for completions, as
 * /proc says of it; the shim recorded the park before the call): a request sent then is
 * received by that wait, never found by an inline peek, before the loop's first wait or inside
 * the iteration in progress. A condition, not a delay: the 1 ms sleep only spaces the looks. */
static void await_loop_waiting(void) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)g_loop_tid);
    for (;;) {
        FILE *f = fopen(path, "r");
        if (!f) {
            perror(path);
            exit(1);
        }
        long nr = -1;
        unsigned long fd, to_submit, min_complete, flags;
        bool waiting = fgets(line, sizeof line, f) &&
                       sscanf(line, "%ld %lx %lx %lx %lx", &nr, &fd, &to_submit, &min_complete, &flags) == 5 &&
                       nr == SYS_io_uring_enter && min_complete > 0 && (flags & IORING_ENTER_GETEVENTS);
        fclose(f);
        if (waiting) return;
        sleep_ms(1);
    }
}

/* A's connection and first request are there before the loop's first wait (main waits for
 * them): its first two waits find their completions posted (the accept's, then A's recv,
 * both complete at submit) and do not park, every run, whatever the load. */
static sem_t g_first_request_sent;

static void *client(void *arg) {
    (void)arg;
    int a = dial();
    request(a, "fast");
    sem_post(&g_first_request_sent);
    await_answer(a);
    for (int i = 0; i < 2; i++) ask(a, "fast");
    ask(a, "bye");
    close(a);
    int b = dial();
    ask(b, "fast");
    await_loop_waiting(); /* the slow request is an iteration of its own, every run */
    ask(b, "slow");
    int c = dial();
    ask(c, "fast");
    ask(c, "fast");
    ask(c, "bye");
    char x;
    while (recv(c, &x, 1, 0) > 0) { /* the server's close of C, through its ring */
    }
    close(c);
    ask(b, "fast");
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

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "batch";
    g_mode = !strcmp(mode, "wait_cqe") ? MODE_WAIT_CQE
             : !strcmp(mode, "timeout") ? MODE_TIMEOUT
             : !strcmp(mode, "enter")   ? MODE_ENTER
                                        : MODE_BATCH;
    int rc = io_uring_queue_init(16, &g_ring, 0);
    if (rc < 0) {
        printf("no io_uring: io_uring_setup: %s\n", strerror(-rc));
        return 3;
    }
    d9p_wait_for_recorder();
    listen_loopback();
    sem_init(&g_first_request_sent, 0, 0);
    g_loop_tid = (pid_t)syscall(SYS_gettid);
    pthread_t t;
    pthread_create(&t, NULL, client, NULL);
    while (sem_wait(&g_first_request_sent) != 0 && errno == EINTR) {
    }
    run_loop();
    pthread_join(t, NULL);
    io_uring_queue_exit(&g_ring);
    printf("done\n");
    return 0;
}
