/* The stories' request server: N instrumented libuv loops, each on its own thread with its
 * own SO_REUSEPORT listener on one port; "ping\n" -> the story's handler -> "pong\n". */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dial9/uv.h>

#include "story_kit.h"

typedef struct story_loop story_loop;

typedef struct story_conn {
    uv_tcp_t tcp;
    story_loop *owner;
    size_t len;
    char buf[512];
} story_conn;

typedef struct reply_req {
    uv_write_t req;
    char data[8];
} reply_req;

struct story_loop {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t stop;
    uv_thread_t thread;
    unsigned index;
    story_server *server;
};

struct story_server {
    story_handler handler;
    void *arg;
    unsigned loops;
    int port;
    story_loop loop[];
};

static void die(const char *what, int err) {
    fprintf(stderr, "story server: %s: %s\n", what, err < 0 ? uv_strerror(err) : strerror(err));
    exit(1);
}

/* Closing with a real callback (even an empty one) rather than NULL: see the report on the
 * libuv adapter's uv_close(h, NULL). */
static void on_handle_closed(uv_handle_t *h) {}

static void on_conn_closed(uv_handle_t *h) { free(h->data); }

static void on_reply_written(uv_write_t *req, int status) { free(req); }

static void send_pong(story_conn *c) {
    static const char pong[] = "pong\n";
    uv_buf_t b = uv_buf_init((char *)pong, 5);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1); /* nearly always all of it, at once */
    if (n == 5) return;
    if (n < 0 && n != UV_EAGAIN) {
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
        return;
    }
    if (n < 0) n = 0;
    reply_req *r = malloc(sizeof *r);
    if (!r) return;
    memcpy(r->data, pong + n, (size_t)(5 - n));
    b = uv_buf_init(r->data, (unsigned)(5 - n));
    if (uv_write(&r->req, (uv_stream_t *)&c->tcp, &b, 1, on_reply_written) != 0) free(r);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    story_conn *c = h->data;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(sizeof c->buf - c->len));
}

/* Every complete line is one request. */
static void on_request_bytes(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    story_conn *c = s->data;
    if (nread < 0) {
        if (!uv_is_closing((uv_handle_t *)s)) uv_close((uv_handle_t *)s, on_conn_closed);
        return;
    }
    c->len += (size_t)nread;
    story_server *srv = c->owner->server;
    char *start = c->buf, *nl;
    while ((nl = memchr(start, '\n', c->len - (size_t)(start - c->buf))) != NULL) {
        srv->handler(c->owner->index, srv->arg);
        send_pong(c);
        if (uv_is_closing((uv_handle_t *)s)) return;
        start = nl + 1;
    }
    c->len -= (size_t)(start - c->buf);
    memmove(c->buf, start, c->len);
    if (c->len == sizeof c->buf) uv_close((uv_handle_t *)s, on_conn_closed); /* no newline: junk */
}

static void on_new_connection(uv_stream_t *listener, int status) {
    if (status != 0) return;
    story_loop *sl = listener->data;
    story_conn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->owner = sl;
    uv_tcp_init(&sl->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_request_bytes);
}

static void close_any(uv_handle_t *h, void *arg) {
    story_loop *sl = arg;
    if (uv_is_closing(h)) return;
    if (h->type == UV_TCP && h != (uv_handle_t *)&sl->listener) uv_close(h, on_conn_closed);
    else uv_close(h, on_handle_closed);
}

static void on_stop(uv_async_t *a) { uv_walk(a->loop, close_any, a->data); }

static void run_loop(void *arg) {
    story_loop *sl = arg;
    uv_run(&sl->loop, UV_RUN_DEFAULT);
}

static int bound_socket(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket", errno);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) die("bind", errno);
    socklen_t alen = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &alen);
    *port = ntohs(a.sin_port);
    return fd;
}

story_server *story_server_start(unsigned loops, const char *worker_name, story_handler handler,
                                 story_loop_setup setup, void *arg) {
    story_server *srv = calloc(1, sizeof *srv + loops * sizeof(story_loop));
    if (!srv) die("calloc", ENOMEM);
    srv->handler = handler;
    srv->arg = arg;
    srv->loops = loops;
    for (unsigned i = 0; i < loops; i++) {
        story_loop *sl = &srv->loop[i];
        sl->index = i;
        sl->server = srv;
        int err = uv_loop_init(&sl->loop);
        if (err) die("uv_loop_init", err);
        d9_uv_instrument(&sl->loop, worker_name);
        uv_tcp_init(&sl->loop, &sl->listener);
        sl->listener.data = sl;
        if ((err = uv_tcp_open(&sl->listener, bound_socket(&srv->port))) != 0) die("uv_tcp_open", err);
        if ((err = uv_listen((uv_stream_t *)&sl->listener, 4096, on_new_connection)) != 0)
            die("uv_listen", err);
        uv_async_init(&sl->loop, &sl->stop, on_stop);
        sl->stop.data = sl;
        if (setup) setup(&sl->loop, i, arg);
    }
    for (unsigned i = 0; i < loops; i++) uv_thread_create(&srv->loop[i].thread, run_loop, &srv->loop[i]);
    return srv;
}

int story_server_port(const story_server *s) { return s->port; }

void story_server_stop(story_server *s) {
    for (unsigned i = 0; i < s->loops; i++) uv_async_send(&s->loop[i].stop);
    for (unsigned i = 0; i < s->loops; i++) {
        uv_thread_join(&s->loop[i].thread);
        uv_loop_close(&s->loop[i].loop);
    }
    free(s);
}
