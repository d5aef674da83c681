/* libuv requests that complete on the loop thread (writes, connects, shutdowns, udp sends):
 * each request is a task that spawns when submitted and terminates after its callback, but one
 * submitted inside a poll whose callback comes before the loop parks again: that callback is a
 * poll of the submitting task (thread_state.h, d9a_defer_spawn). What the trampoline needs is
 * kept in the request itself (uv_request_cell.h). */
#include "uv_request_cell.h"

#define REQUEST_TRAMPOLINE(name, req_t, cb_t)                                              \
    static void name(req_t *req, int status) {                                             \
        d9a_fn fn;                                                                         \
        d9a_frame f;                                                                       \
        if (!uv_req_done_begin(req, req->handle, &fn, &f)) return;                         \
        ((cb_t)fn)(req, status);                                                           \
        d9a_poll_exit(&f);                                                                 \
    }

REQUEST_TRAMPOLINE(write_trampoline, uv_write_t, uv_write_cb)
REQUEST_TRAMPOLINE(shutdown_trampoline, uv_shutdown_t, uv_shutdown_cb)
REQUEST_TRAMPOLINE(connect_trampoline, uv_connect_t, uv_connect_cb)
REQUEST_TRAMPOLINE(udp_send_trampoline, uv_udp_send_t, uv_udp_send_cb)

/* Track request `req` of `loop` with completion callback `cb`; false: pass it through (also
 * when libuv forwards an already swapped callback to itself: uv_write calls uv_write2).
 * While nothing records, a request is not tracked at all (d9a_pass_through: the wrapper goes
 * straight to libuv): it lives for one round trip, so one submitted before a start is simply
 * not in that run. */
static void spawn_deferred(void *req) { uv_req_cell_spawn_deferred(req); }

static __attribute__((noinline)) void track_new_request(void *req, const uv_loop_t *loop, d9a_fn cb,
                                                        const d9_loc *explicit_loc) {
    uv_req_cell_track_loop(req, loop, cb, d9a_loc_for((const void *)cb, explicit_loc), spawn_deferred);
}

static inline bool track_request(void *req, const uv_loop_t *loop, d9a_fn cb,
                                 const d9_loc *explicit_loc, d9a_fn trampoline) {
    if (!D9__ACTIVE()) return false;
    if (!req || !cb || cb == trampoline || !d9a_loop_recorded(loop)) return false;
    track_new_request(req, loop, cb, explicit_loc);
    return true;
}

static inline int submitted(void *req, int rc) {
    if (rc < 0) uv_req_cell_untrack(req);
    return rc;
}

D9A_REQUEST_WRAPPER(int, uv_write,
                    (uv_write_t *req, uv_stream_t *h, const uv_buf_t bufs[], unsigned int nbufs,
                     uv_write_cb cb),
                    (req, h, bufs, nbufs, cb)) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    /* libuv's uv_write is uv_write2 without a handle to send (1.44 and its main branch):
     * straight there, not through it and this adapter's uv_write2 wrapper (~15 instructions) */
    if (h && track_request(req, h->loop, (d9a_fn)cb, explicit_loc,
                           (d9a_fn)write_trampoline))
        return submitted(req, D9A_REAL(uv_write2)(req, h, bufs, nbufs, NULL, write_trampoline));
    return D9A_REAL(uv_write)(req, h, bufs, nbufs, cb);
}

/* libuv's uv_write calls uv_write2 with the trampoline already in place: straight on, tested
 * first (every tracked uv_write pays this wrapper twice) */
#define WRITE2_PARAMS                                                                      \
    (uv_write_t *req, uv_stream_t *h, const uv_buf_t bufs[], unsigned int nbufs,           \
     uv_stream_t *send_handle, uv_write_cb cb)
#define WRITE2_ARGS (req, h, bufs, nbufs, send_handle, cb)
D9A_NEXT_DEFINE(int, uv_write2, WRITE2_PARAMS, WRITE2_ARGS)
static __attribute__((noinline)) int tracked_uv_write2 WRITE2_PARAMS;
D9A_EXPORT int uv_write2 WRITE2_PARAMS {
    if (cb == write_trampoline || d9a_pass_through()) return D9A_NEXT(uv_write2, WRITE2_ARGS);
    return tracked_uv_write2 WRITE2_ARGS;
}

static int tracked_uv_write2 WRITE2_PARAMS {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track_request(req, h->loop, (d9a_fn)cb, explicit_loc,
                           (d9a_fn)write_trampoline))
        return submitted(req, D9A_REAL(uv_write2)(req, h, bufs, nbufs, send_handle,
                                                  write_trampoline));
    return D9A_REAL(uv_write2)(req, h, bufs, nbufs, send_handle, cb);
}

D9A_REQUEST_WRAPPER(int, uv_shutdown, (uv_shutdown_t *req, uv_stream_t *h, uv_shutdown_cb cb),
                    (req, h, cb)) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track_request(req, h->loop, (d9a_fn)cb, explicit_loc,
                           (d9a_fn)shutdown_trampoline))
        return submitted(req, D9A_REAL(uv_shutdown)(req, h, shutdown_trampoline));
    return D9A_REAL(uv_shutdown)(req, h, cb);
}

D9A_REQUEST_WRAPPER(int, uv_tcp_connect, (uv_connect_t *req, uv_tcp_t *h, const struct sockaddr *addr,
                              uv_connect_cb cb),
                    (req, h, addr, cb)) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track_request(req, h->loop, (d9a_fn)cb, explicit_loc,
                           (d9a_fn)connect_trampoline))
        return submitted(req, D9A_REAL(uv_tcp_connect)(req, h, addr, connect_trampoline));
    return D9A_REAL(uv_tcp_connect)(req, h, addr, cb);
}

/* Reports every failure through the callback, so the request always completes. */
D9A_EXPORT void uv_pipe_connect(uv_connect_t *req, uv_pipe_t *h, const char *name,
                                uv_connect_cb cb) {
    if (d9a_pass_through()) {
        D9A_REAL(uv_pipe_connect)(req, h, name, cb);
        return;
    }
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track_request(req, h->loop, (d9a_fn)cb, explicit_loc,
                           (d9a_fn)connect_trampoline)) {
        D9A_REAL(uv_pipe_connect)(req, h, name, connect_trampoline);
        return;
    }
    D9A_REAL(uv_pipe_connect)(req, h, name, cb);
}

D9A_REQUEST_WRAPPER(int, uv_udp_send, (uv_udp_send_t *req, uv_udp_t *h, const uv_buf_t bufs[],
                           unsigned int nbufs, const struct sockaddr *addr, uv_udp_send_cb cb),
                    (req, h, bufs, nbufs, addr, cb)) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track_request(req, h->loop, (d9a_fn)cb, explicit_loc,
                           (d9a_fn)udp_send_trampoline))
        return submitted(req, D9A_REAL(uv_udp_send)(req, h, bufs, nbufs, addr,
                                                    udp_send_trampoline));
    return D9A_REAL(uv_udp_send)(req, h, bufs, nbufs, addr, cb);
}
