/* A small io_uring server written without liburing, as programs that drive the ring
 * themselves are: io_uring_setup and io_uring_enter through glibc's syscall(), the rings
 * mapped with mmap and read and written by hand. What test_preload_raw_uring.sh records.
 *
 *   d9p_raw_uring_server syscall|inline
 *
 * The loop (run_loop) accepts and receives through the ring (IORING_OP_ACCEPT,
 * IORING_OP_RECV) and answers each request with write(): "fast" at once, "slow" after
 * sleeping 200 ms in the handler, "bye" by answering and closing the connection (A and B with
 * close(), C through the ring, IORING_OP_CLOSE). Each round submits what it prepared and waits
 * for at least one completion in one io_uring_enter (IORING_ENTER_GETEVENTS, min_complete 1),
 * then handles every completion posted. Mode syscall enters through syscall() and maps the
 * SQ and CQ rings apart; mode inline enters with its own syscall instruction (x86-64), which
 * no interposer can see, and maps them as one (IORING_FEAT_SINGLE_MMAP). The client, on a
 * thread that never touches the ring, sends one request at a time:
 *   A: fast x3, bye; B: fast, slow; C: fast x2, bye (then it waits for C's end of file);
 *   B: fast, bye.
 * The server prints one fact per line: accepted <conn> <fd> | requests <conn> <n> |
 * waits <n> (its io_uring_enter calls that waited) | done. It exits with status 3, saying
 * "no io_uring: <why>", when the kernel refuses a ring, and 4 for a mode this machine cannot
 * run ("no inline system call here"). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wait_for_recorder.h"

static bool g_inline;
static int g_listen, g_port;

/* ---------------------------------------------------------------- the ring, by hand */

static struct {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, sq_entries;
    _Atomic unsigned *sq_head;
    unsigned *cq_head, *cq_mask;
    _Atomic unsigned *cq_tail;
    struct io_uring_cqe *cqes;
    struct io_uring_sqe *sqes;
    unsigned pending; /* prepared, not yet submitted */
} g_ring;

static void *map_ring(size_t len, off_t off) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, g_ring.fd, off);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static int ring_setup(unsigned entries) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = syscall(SYS_io_uring_setup, entries, &p);
    if (fd < 0) return -errno;
    g_ring.fd = (int)fd;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq, *cq;
    if (g_inline && (p.features & IORING_FEAT_SINGLE_MMAP)) {
        sq = cq = map_ring(sq_len > cq_len ? sq_len : cq_len, IORING_OFF_SQ_RING);
    } else {
        sq = map_ring(sq_len, IORING_OFF_SQ_RING);
        cq = map_ring(cq_len, IORING_OFF_CQ_RING);
    }
    g_ring.sqes = map_ring(p.sq_entries * sizeof(struct io_uring_sqe), IORING_OFF_SQES);
    g_ring.sq_head = (_Atomic unsigned *)(sq + p.sq_off.head);
    g_ring.sq_tail = (unsigned *)(sq + p.sq_off.tail);
    g_ring.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    g_ring.sq_array = (unsigned *)(sq + p.sq_off.array);
    g_ring.sq_entries = p.sq_entries;
    g_ring.cq_head = (unsigned *)(cq + p.cq_off.head);
    g_ring.cq_tail = (_Atomic unsigned *)(cq + p.cq_off.tail);
    g_ring.cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    g_ring.cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    return 0;
}

static struct io_uring_sqe *sqe(void) {
    unsigned tail = *g_ring.sq_tail;
    if (tail - atomic_load_explicit(g_ring.sq_head, memory_order_acquire) >= g_ring.sq_entries) {
        fprintf(stderr, "submission queue full\n");
        exit(1);
    }
    unsigned index = tail & *g_ring.sq_mask;
    struct io_uring_sqe *s = &g_ring.sqes[index];
    memset(s, 0, sizeof *s);
    g_ring.sq_array[index] = index;
    atomic_store_explicit((_Atomic unsigned *)g_ring.sq_tail, tail + 1, memory_order_release);
    g_ring.pending++;
    return s;
}

/* io_uring_enter through glibc's syscall(), or with this program's own instruction */
static long enter(unsigned to_submit, unsigned min_complete, unsigned flags) {
    if (!g_inline) {
        long rc = syscall(SYS_io_uring_enter, g_ring.fd, to_submit, min_complete, flags, NULL, 0);
        return rc < 0 ? -errno : rc;
    }
#if defined(__x86_64__)
    long rc;
    register long r10 __asm__("r10") = flags;
    register long r8 __asm__("r8") = 0;
    register long r9 __asm__("r9") = 0;
    __asm__ volatile("syscall"
                     : "=a"(rc)
                     : "0"((long)SYS_io_uring_enter), "D"((long)g_ring.fd), "S"((long)to_submit),
                       "d"((long)min_complete), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return rc;
#else
    return -ENOSYS;
#endif
}

/* ---------------------------------------------------------------- the server */

#define MAX_CONN 4
enum { OP_ACCEPT, OP_RECV, OP_CLOSE };
static struct conn {
    int fd;
    char name;
    int requests;
    char buf[64];
} g_conn[MAX_CONN];
static int g_accepted, g_closed, g_waits;

/* user_data: the operation in the high half, the connection's index in the low one */
static uint64_t tag(int op, int k) { return (uint64_t)op << 32 | (uint32_t)k; }

static void want_accept(void) {
    struct io_uring_sqe *s = sqe();
    s->opcode = IORING_OP_ACCEPT;
    s->fd = g_listen;
    s->accept_flags = SOCK_CLOEXEC;
    s->user_data = tag(OP_ACCEPT, 0);
}

static void want_recv(int k) {
    struct io_uring_sqe *s = sqe();
    s->opcode = IORING_OP_RECV;
    s->fd = g_conn[k].fd;
    s->addr = (uint64_t)(uintptr_t)g_conn[k].buf;
    s->len = sizeof g_conn[k].buf - 1;
    s->user_data = tag(OP_RECV, k);
}

static void want_close(int k) {
    struct io_uring_sqe *s = sqe();
    s->opcode = IORING_OP_CLOSE;
    s->fd = g_conn[k].fd;
    s->user_data = tag(OP_CLOSE, k);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
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
    if (write(c->fd, "ok\n", 3) != 3) perror("write");
    if (strncmp(c->buf, "bye", 3) != 0) {
        want_recv(k);
        return;
    }
    printf("requests %c %d\n", c->name, c->requests);
    if (c->name == 'C') { /* through the ring: its task ends at the close's completion */
        want_close(k);
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
        long rc = enter(g_ring.pending, 1, IORING_ENTER_GETEVENTS);
        if (rc < 0 && rc != -EINTR) {
            fprintf(stderr, "io_uring_enter: %s\n", strerror((int)-rc));
            exit(1);
        }
        if (rc >= 0) g_ring.pending = 0; /* all of them: a ring of sockets takes every SQE */
        g_waits++;
        unsigned head = *g_ring.cq_head;
        unsigned tail = atomic_load_explicit(g_ring.cq_tail, memory_order_acquire);
        for (; head != tail; head++) handle(&g_ring.cqes[head & *g_ring.cq_mask]);
        atomic_store_explicit((_Atomic unsigned *)g_ring.cq_head, head, memory_order_release);
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
    for (int i = 0; i < 3; i++) ask(a, "fast");
    ask(a, "bye");
    close(a);
    int b = dial();
    ask(b, "fast");
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
    g_inline = argc > 1 && !strcmp(argv[1], "inline");
#if !defined(__x86_64__)
    if (g_inline) {
        printf("no inline system call here\n");
        return 4;
    }
#endif
    d9p_wait_for_recorder();
    int rc = ring_setup(16);
    if (rc < 0) {
        printf("no io_uring: io_uring_setup: %s\n", strerror(-rc));
        return 3;
    }
    listen_loopback();
    pthread_t t;
    pthread_create(&t, NULL, client, NULL);
    run_loop();
    pthread_join(t, NULL);
    printf("waits %d\n", g_waits);
    printf("done\n");
    return 0;
}
