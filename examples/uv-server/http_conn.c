#include "http_conn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dial9/dial9.h>

#include "routes.h"

/* Each request is a span, from its parse to the end of its answer's write (on the loop thread
 * or after a thread-pool job): `analyze` says where its time went. Ids are the server's own,
 * process-wide, as a server would log them. */
#define REQUEST_SPAN D9_SPAN_NAME("http_request")
static _Atomic uint64_t next_request_id = 1;

#define CONN_BUFFER 16384
#define CONN_MAGIC 0x68747470u /* "http": tells connection handles from the others in uv_walk */

struct http_conn {
    uv_tcp_t tcp;            /* tcp.data points back here */
    uint32_t magic;
    server_loop *owner;
    unsigned refs;           /* the open handle + each async route + each write in flight */
    bool closing;
    bool reading;
    bool waiting;            /* an async route has not answered yet: hold later requests */
    bool close_after_write;  /* the current request ends the connection */
    uint64_t request_id;     /* the request being answered (its span), 0 when none */
    size_t len;              /* bytes received and not yet consumed */
    char buf[CONN_BUFFER];
};

typedef struct write_req {
    uv_write_t req;
    http_conn *conn;
    uint64_t request_id;     /* the span its completion ends, 0 when none */
    bool close_after;
    char data[];
} write_req;

static void conn_process(http_conn *c);

static void conn_unref(http_conn *c) {
    if (--c->refs == 0) free(c);
}

static void on_closed(uv_handle_t *h) { conn_unref(h->data); }

static void conn_shut(http_conn *c) {
    if (c->closing) return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    http_conn *c = h->data;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(CONN_BUFFER - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    http_conn *c = s->data;
    if (nread < 0) {
        conn_shut(c); /* EOF or a reset: nothing more to answer */
        return;
    }
    c->len += (size_t)nread;
    conn_process(c);
}

/* Read while there is room and the connection is to go on. A full buffer (a client that
 * pipelines faster than we answer) pauses reading until requests are consumed. */
static void update_reading(http_conn *c) {
    bool want = !c->closing && !c->close_after_write && c->len < CONN_BUFFER;
    if (want && !c->reading) c->reading = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0;
    else if (!want && c->reading && !c->closing) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

static void conn_process(http_conn *c) {
    while (!c->closing && !c->waiting && !c->close_after_write) {
        http_request req;
        http_parse_result r = http_parse_request(c->buf, c->len, &req);
        if (r == HTTP_PARSE_INCOMPLETE) {
            if (c->len == CONN_BUFFER) {
                c->close_after_write = true;
                http_conn_respond(c, 431, "text/plain", "request too large\n", 18);
            }
            break;
        }
        if (r == HTTP_PARSE_BAD) {
            c->close_after_write = true;
            http_conn_respond(c, 400, "text/plain", "bad request\n", 12);
            break;
        }
        c->close_after_write = !req.keep_alive;
        c->owner->requests++;
        c->request_id = next_request_id++;
        d9_span_begin(REQUEST_SPAN, c->request_id);
        route_request(c, &req); /* answers now, or later between begin/end_async */
        memmove(c->buf, c->buf + req.length, c->len - req.length);
        c->len -= req.length;
    }
    update_reading(c);
}

void http_conn_accept(server_loop *owner) {
    http_conn *c = calloc(1, sizeof *c);
    if (!c) return; /* the pending connection stays in the backlog; the next one may fit */
    c->magic = CONN_MAGIC;
    c->owner = owner;
    c->refs = 1;
    uv_tcp_init(&owner->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept((uv_stream_t *)&owner->listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_shut(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    owner->connections++;
    update_reading(c);
}

bool http_conn_owns_handle(const uv_handle_t *h) {
    return h->type == UV_TCP && h->data && ((const http_conn *)h->data)->magic == CONN_MAGIC;
}

void http_conn_close(uv_handle_t *h) { conn_shut(h->data); }

server_loop *http_conn_owner(const http_conn *c) { return c->owner; }

static const char *status_text(int status) {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    default: return "Internal Server Error";
    }
}

static void on_written(uv_write_t *req, int status) {
    write_req *w = (write_req *)req;
    http_conn *c = w->conn;
    if (w->request_id) d9_span_end(REQUEST_SPAN, w->request_id);
    if (status < 0 || w->close_after) conn_shut(c);
    free(w);
    conn_unref(c);
}

/* A request left unanswered (the connection closes, no memory): its span ends here. */
static void end_request_span(http_conn *c) {
    if (c->request_id) d9_span_end(REQUEST_SPAN, c->request_id);
    c->request_id = 0;
}

void http_conn_respond(http_conn *c, int status, const char *content_type, const char *body,
                       size_t body_len) {
    if (c->closing) {
        end_request_span(c);
        return;
    }
    char head[256];
    int head_len = snprintf(head, sizeof head,
                            "HTTP/1.1 %d %s\r\nServer: d9-uv-server\r\nContent-Type: %s\r\n"
                            "Content-Length: %zu\r\n%s\r\n",
                            status, status_text(status), content_type, body_len,
                            c->close_after_write ? "Connection: close\r\n" : "");
    write_req *w = malloc(sizeof *w + (size_t)head_len + body_len);
    if (!w) {
        end_request_span(c);
        conn_shut(c);
        return;
    }
    w->conn = c;
    w->request_id = c->request_id; /* the answer ends the request's span */
    c->request_id = 0;
    w->close_after = c->close_after_write;
    memcpy(w->data, head, (size_t)head_len);
    memcpy(w->data + head_len, body, body_len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)((size_t)head_len + body_len));
    c->refs++;
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0) {
        if (w->request_id) d9_span_end(REQUEST_SPAN, w->request_id);
        free(w);
        conn_unref(c);
        conn_shut(c);
    }
}

void http_conn_begin_async(http_conn *c) {
    c->waiting = true;
    c->refs++;
}

void http_conn_end_async(http_conn *c) {
    c->waiting = false;
    if (!c->closing) conn_process(c);
    conn_unref(c);
}
