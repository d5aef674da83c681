/* The libuv adapter's per-exchange cost, for callgrind (test_uv_adapter_instructions.sh): what
 * the demo server does per request, N times while recording. A stream (uv_pipe_t over one end
 * of a socketpair) reads one byte (alloc and read callbacks), answers it with a uv_write whose
 * completion reads the answer and writes the next byte from the other end. Every exchange is one readiness of the
 * loop's epoll_wait, two handle callbacks and one request tracked to its completion. Prints
 * "exchanges N" and the trace's run directory. */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "counted_program.h"
#include "dial9/uv.h"

static long done, wanted;
static int peer;
static char in_bytes[64];
static uv_write_t answer;
static uv_buf_t answer_buf = {.base = "y", .len = 1};

void d9u_counted_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void d9u_counted_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
void d9u_counted_written(uv_write_t *req, int status);

/* noinline and named: the test leaves the application's own instructions out by these names */
__attribute__((noinline)) void d9u_counted_alloc(uv_handle_t *h, size_t suggested,
                                                 uv_buf_t *buf) {
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(in_bytes, sizeof in_bytes); /* more than comes: one read a turn */
}

__attribute__((noinline)) void d9u_counted_written(uv_write_t *req, int status) {
    char answered;
    /* taken out at once: each unread byte holds a whole buffer of the socket's send budget */
    if (status != 0 || read(peer, &answered, 1) != 1) exit(3);
    if (++done == wanted) {
        uv_close((uv_handle_t *)req->handle, NULL);
        return;
    }
    if (write(peer, "x", 1) != 1) exit(3);
}

__attribute__((noinline)) void d9u_counted_read(uv_stream_t *s, ssize_t nread,
                                                const uv_buf_t *buf) {
    (void)buf;
    if (nread == 0) return;
    if (nread != 1) exit(3);
    if (uv_write(&answer, s, &answer_buf, 1, d9u_counted_written) != 0) exit(3);
}

int main(int argc, char **argv) {
    wanted = d9t_counted_n(argc, argv, "EXCHANGES", NULL, NULL);
    int sv[2];
    if (wanted <= 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 2;
    peer = sv[1];
    uv_loop_t loop;
    uv_pipe_t stream;
    if (uv_loop_init(&loop) != 0 || d9_uv_instrument(&loop, "counted") != 0 ||
        d9t_counted_start(argv[2]) != 0)
        return 1;
    if (uv_pipe_init(&loop, &stream, 0) != 0 || uv_pipe_open(&stream, sv[0]) != 0 ||
        uv_read_start((uv_stream_t *)&stream, d9u_counted_alloc, d9u_counted_read) != 0 ||
        write(peer, "x", 1) != 1)
        return 1;
    uv_run(&loop, UV_RUN_DEFAULT);
    d9t_counted_report("exchanges", done);
    uv_loop_close(&loop);
    close(peer);
    return done == wanted ? 0 : 1;
}
