#include "routes.h"

#include <fcntl.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define FILE_MAX (64 * 1024) /* /file serves at most this much of the file */
#define WORK_MAX_MS 1000

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ / */

static void route_hello(http_conn *c) {
    char body[64];
    int n = snprintf(body, sizeof body, "hello from loop %u\n", http_conn_owner(c)->index);
    http_conn_respond(c, 200, "text/plain", body, (size_t)n);
}

/* ------------------------------------------------------------------ /work?ms=N */

/* Real CPU work (xorshift rounds) until `ms` have passed: the loop can do nothing else
 * meanwhile. Not inlined, so a CPU profile names it. */
__attribute__((noinline)) static uint64_t compute_for_ms(long ms) {
    uint64_t deadline = now_ns() + (uint64_t)ms * 1000000u;
    uint64_t x = 88172645463325252ull;
    do {
        for (int i = 0; i < 2000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
    } while (now_ns() < deadline);
    return x;
}

static void route_work(http_conn *c, const http_request *req) {
    long ms = http_query_long(req, "ms", 1);
    if (ms < 0) ms = 0;
    if (ms > WORK_MAX_MS) ms = WORK_MAX_MS;
    uint64_t result = compute_for_ms(ms);
    char body[96];
    int n = snprintf(body, sizeof body, "computed %ld ms: %016llx\n", ms, (unsigned long long)result);
    http_conn_respond(c, 200, "text/plain", body, (size_t)n);
}

/* ------------------------------------------------------------------ /file */

/* open -> read -> close, each a uv_fs_* request on libuv's thread pool. The same uv_fs_t is
 * reused for the three steps, so the trace shows one task moving between the pool and the
 * loop. */
typedef struct file_job {
    uv_fs_t req;
    http_conn *conn;
    uv_file fd;
    ssize_t len;
    char data[FILE_MAX];
} file_job;

static void file_job_finish(file_job *job, int status, const char *body, size_t len) {
    http_conn_respond(job->conn, status, "application/octet-stream", body, len);
    http_conn_end_async(job->conn);
    free(job);
}

static void on_file_closed(uv_fs_t *req) {
    file_job *job = (file_job *)req;
    uv_fs_req_cleanup(req);
    if (job->len < 0) file_job_finish(job, 500, "read failed\n", 12);
    else file_job_finish(job, 200, job->data, (size_t)job->len);
}

static void on_file_read(uv_fs_t *req) {
    file_job *job = (file_job *)req;
    job->len = req->result;
    uv_fs_req_cleanup(req);
    uv_loop_t *loop = req->loop;
    if (uv_fs_close(loop, req, job->fd, on_file_closed) != 0) {
        job->len = -1;
        file_job_finish(job, 500, "close failed\n", 13);
    }
}

static void on_file_open(uv_fs_t *req) {
    file_job *job = (file_job *)req;
    ssize_t fd = req->result;
    uv_fs_req_cleanup(req);
    if (fd < 0) {
        file_job_finish(job, 500, "open failed\n", 12);
        return;
    }
    job->fd = (uv_file)fd;
    uv_buf_t b = uv_buf_init(job->data, FILE_MAX);
    if (uv_fs_read(req->loop, req, job->fd, &b, 1, 0, on_file_read) != 0) {
        uv_fs_t close_req;
        uv_fs_close(req->loop, &close_req, job->fd, NULL); /* synchronous: rare error path */
        uv_fs_req_cleanup(&close_req);
        file_job_finish(job, 500, "read failed\n", 12);
    }
}

static void route_file(http_conn *c) {
    file_job *job = malloc(sizeof *job);
    if (!job) {
        http_conn_respond(c, 500, "text/plain", "no memory\n", 10);
        return;
    }
    job->conn = c;
    job->len = 0;
    server_loop *owner = http_conn_owner(c);
    http_conn_begin_async(c);
    if (uv_fs_open(&owner->loop, &job->req, owner->file_path, O_RDONLY, 0, on_file_open) != 0)
        file_job_finish(job, 500, "open failed\n", 12);
}

/* ------------------------------------------------------------------ /lookup */

typedef struct lookup_job {
    uv_getaddrinfo_t req;
    http_conn *conn;
} lookup_job;

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
    lookup_job *job = (lookup_job *)req;
    char body[512];
    size_t n = 0;
    if (status != 0) {
        n = (size_t)snprintf(body, sizeof body, "lookup failed: %s\n", uv_strerror(status));
    } else {
        for (struct addrinfo *ai = res; ai && n < sizeof body - 64; ai = ai->ai_next) {
            char name[64] = "?";
            if (ai->ai_family == AF_INET) uv_ip4_name((struct sockaddr_in *)ai->ai_addr, name, sizeof name);
            else if (ai->ai_family == AF_INET6) uv_ip6_name((struct sockaddr_in6 *)ai->ai_addr, name, sizeof name);
            n += (size_t)snprintf(body + n, sizeof body - n, "localhost %s\n", name);
        }
    }
    uv_freeaddrinfo(res);
    http_conn_respond(job->conn, status == 0 ? 200 : 502, "text/plain", body, n);
    http_conn_end_async(job->conn);
    free(job);
}

static void route_lookup(http_conn *c) {
    lookup_job *job = malloc(sizeof *job);
    if (!job) {
        http_conn_respond(c, 500, "text/plain", "no memory\n", 10);
        return;
    }
    job->conn = c;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    http_conn_begin_async(c);
    int err = uv_getaddrinfo(&http_conn_owner(c)->loop, &job->req, on_resolved, "localhost", NULL, &hints);
    if (err != 0) {
        http_conn_respond(c, 500, "text/plain", "lookup failed\n", 14);
        http_conn_end_async(c);
        free(job);
    }
}

/* ------------------------------------------------------------------ dispatch */

void route_request(http_conn *c, const http_request *req) {
    if (strcmp(req->method, "GET") != 0) http_conn_respond(c, 405, "text/plain", "GET only\n", 9);
    else if (http_path_is(req, "/")) route_hello(c);
    else if (http_path_is(req, "/work")) route_work(c, req);
    else if (http_path_is(req, "/file")) route_file(c);
    else if (http_path_is(req, "/lookup")) route_lookup(c);
    else http_conn_respond(c, 404, "text/plain", "not found\n", 10);
}
