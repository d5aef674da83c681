/* libuv handles: every function that gives a handle a callback is wrapped so that libuv
 * calls a trampoline, which records a poll of the handle's task around the application's
 * callback. A handle's task spawns at its first registration and terminates when its close
 * completes. uv_async_send records a wake of the async handle's task; handles that read,
 * accept or poll an fd get a readiness wake whenever the loop's poller returns it ready.
 *
 * The trampolines are in libuv's handles only while recording (lazy_wrap.h, uv_lazy.c):
 * while nothing records a registration is tracked but gives libuv the application's own
 * callback, and the loop's thread swaps them when recording starts or stops
 * (d9a_uv_swap_callbacks, below). uv_fs_poll keeps its callback where only libuv reaches it
 * (a private struct), so it always gets its trampoline. */
#include <string.h>

#include "ready_wakes.h"
#include "uv_handle_cell.h"

/* ---------------------------------------------------------------- trampolines */

#define HANDLE_TRAMPOLINE_0(name, handle_t, cb_t, role)                                    \
    static void name(handle_t *h) {                                                        \
        d9a_fn fn;                                                                         \
        d9a_frame f;                                                                       \
        if (!uv_handle_callback_begin(h, role, &fn, &f)) return;                           \
        ((cb_t)fn)(h);                                                                     \
        d9a_poll_exit(&f);                                                                 \
    }

HANDLE_TRAMPOLINE_0(timer_trampoline, uv_timer_t, uv_timer_cb, UV_ROLE_CB)
HANDLE_TRAMPOLINE_0(idle_trampoline, uv_idle_t, uv_idle_cb, UV_ROLE_CB)
HANDLE_TRAMPOLINE_0(prepare_trampoline, uv_prepare_t, uv_prepare_cb, UV_ROLE_CB)
HANDLE_TRAMPOLINE_0(check_trampoline, uv_check_t, uv_check_cb, UV_ROLE_CB)
HANDLE_TRAMPOLINE_0(async_trampoline, uv_async_t, uv_async_cb, UV_ROLE_CB)

static void poll_trampoline(uv_poll_t *h, int status, int events) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_CB, &fn, &f)) return;
    ((uv_poll_cb)fn)(h, status, events);
    d9a_poll_exit(&f);
}

static void signal_trampoline(uv_signal_t *h, int signum) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_CB, &fn, &f)) return;
    ((uv_signal_cb)fn)(h, signum);
    d9a_poll_exit(&f);
}

static void fs_event_trampoline(uv_fs_event_t *h, const char *filename, int events, int status) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_CB, &fn, &f)) return;
    ((uv_fs_event_cb)fn)(h, filename, events, status);
    d9a_poll_exit(&f);
}

static void fs_poll_trampoline(uv_fs_poll_t *h, int status, const uv_stat_t *prev,
                               const uv_stat_t *curr) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_CB, &fn, &f)) return;
    ((uv_fs_poll_cb)fn)(h, status, prev, curr);
    d9a_poll_exit(&f);
}

/* Its poll goes on into the read callback's (uv_handle_alloc_begin). */
static void alloc_trampoline(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_alloc_begin(h, &fn, &f)) {
        buf->base = NULL; /* libuv then reports UV_ENOBUFS to the read callback */
        buf->len = 0;
        return;
    }
    ((uv_alloc_cb)fn)(h, suggested, buf);
    d9a_poll_exit_into(&f);
}

static void read_trampoline(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_CB, &fn, &f)) return;
    ((uv_read_cb)fn)(h, nread, buf);
    d9a_poll_exit(&f);
}

static void connection_trampoline(uv_stream_t *h, int status) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_LISTEN, &fn, &f)) return;
    ((uv_connection_cb)fn)(h, status);
    d9a_poll_exit(&f);
}

static void udp_recv_trampoline(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf,
                                const struct sockaddr *addr, unsigned flags) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_CB, &fn, &f)) return;
    ((uv_udp_recv_cb)fn)(h, nread, buf, addr, flags);
    d9a_poll_exit(&f);
}

static void exit_trampoline(uv_process_t *h, int64_t exit_status, int term_signal) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_handle_callback_begin(h, UV_ROLE_CB, &fn, &f)) return;
    ((uv_exit_cb)fn)(h, exit_status, term_signal);
    d9a_poll_exit(&f);
}

/* Installed for every tracked handle that closes, with or without a close_cb: it is how the
 * adapter learns that the handle is gone. */
static void close_trampoline(uv_handle_t *h) {
    d9a_fn fn;
    d9a_frame f;
    bool called = d9a_final_callback_begin(h, UV_ROLE_CLOSE, &fn, &f);
    uv_handle_cell_clear(h); /* its entry is gone */
    if (!called) return;
    d9a_no_continuation(&f); /* initialized again in its close callback: a new handle */
    ((uv_close_cb)fn)(h);
    d9a_poll_exit(&f);
}

/* ---------------------------------------------------------------- wrappers */

/* Whether to swap the callback of a registration on `loop`. libuv registers callbacks again
 * itself (uv_timer_again calls uv_timer_start with the stored callback): a trampoline passed
 * back in is already what libuv should hold, and tracked. */
static inline bool track(const void *h, const uv_loop_t *loop, unsigned role, d9a_fn cb,
                         const d9_loc *explicit_loc, d9a_fn trampoline) {
    if (cb == trampoline) return true;
    if (!cb || !d9a_loop_recorded(loop)) return false;
    int rc = d9a_track(h, loop, role, cb, explicit_loc);
    if (rc == 2 || (rc == 1 && !uv_handle_cell_valid(h))) d9a_uv_cell_refresh(h);
    return rc != 0;
}

/* What a tracked registration gives libuv: the trampoline while the loop's handles hold
 * theirs, else the application's callback (a trampoline libuv passed back stays one). */
#define PICK(loop, trampoline, cb) (d9a_loop_wrapped(loop) ? (trampoline) : (cb))

#define WRAP_START(fn_name, handle_t, cb_t, trampoline)                                    \
    D9A_EXPORT int fn_name(handle_t *h, cb_t cb) {                                         \
        const d9_loc *explicit_loc = d9a_take_next_loc();                                  \
        if (h && track(h, h->loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)trampoline)) \
            return D9A_REAL(fn_name)(h, PICK(h->loop, trampoline, cb));                    \
        return D9A_REAL(fn_name)(h, cb);                                                   \
    }

WRAP_START(uv_idle_start, uv_idle_t, uv_idle_cb, idle_trampoline)
WRAP_START(uv_prepare_start, uv_prepare_t, uv_prepare_cb, prepare_trampoline)
WRAP_START(uv_check_start, uv_check_t, uv_check_cb, check_trampoline)

D9A_EXPORT int uv_timer_start(uv_timer_t *h, uv_timer_cb cb, uint64_t timeout, uint64_t repeat) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, h->loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)timer_trampoline))
        return D9A_REAL(uv_timer_start)(h, PICK(h->loop, timer_trampoline, cb), timeout,
                                        repeat);
    return D9A_REAL(uv_timer_start)(h, cb, timeout, repeat);
}

D9A_EXPORT int uv_async_init(uv_loop_t *loop, uv_async_t *h, uv_async_cb cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)async_trampoline)) {
        int rc = D9A_REAL(uv_async_init)(loop, h, PICK(loop, async_trampoline, cb));
        if (rc < 0) {
            d9a_untrack(h);
            uv_handle_cell_clear(h);
        }
        return rc;
    }
    return D9A_REAL(uv_async_init)(loop, h, cb);
}

/* Called from any thread; the waking task and worker are the caller's. */
D9A_EXPORT int uv_async_send(uv_async_t *h) {
    if (D9__ACTIVE()) {
        uint64_t task = d9a_table_task(h);
        if (task) d9_wake(task);
    }
    return D9A_REAL(uv_async_send)(h);
}

/* The fd of tracked handle `h` runs its callback when ready in `dirs`. */
static void watch_fd(const uv_handle_t *h, unsigned dirs) {
    uv_os_fd_t fd;
    uint64_t task = d9a_table_task(h);
    if (task && D9A_REAL(uv_fileno)(h, &fd) == 0) d9a_fd_watch(fd, dirs, task);
}

D9A_EXPORT int uv_poll_start(uv_poll_t *h, int events, uv_poll_cb cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, h->loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)poll_trampoline)) {
        int rc = D9A_REAL(uv_poll_start)(h, events, PICK(h->loop, poll_trampoline, cb));
        if (rc == 0)
            watch_fd((const uv_handle_t *)h,
                     (events & (UV_READABLE | UV_DISCONNECT | UV_PRIORITIZED) ? D9A_FD_IN : 0) |
                         (events & UV_WRITABLE ? D9A_FD_OUT : 0));
        return rc;
    }
    return D9A_REAL(uv_poll_start)(h, events, cb);
}

D9A_EXPORT int uv_signal_start(uv_signal_t *h, uv_signal_cb cb, int signum) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, h->loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)signal_trampoline))
        return D9A_REAL(uv_signal_start)(h, PICK(h->loop, signal_trampoline, cb), signum);
    return D9A_REAL(uv_signal_start)(h, cb, signum);
}

D9A_EXPORT int uv_signal_start_oneshot(uv_signal_t *h, uv_signal_cb cb, int signum) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, h->loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)signal_trampoline))
        return D9A_REAL(uv_signal_start_oneshot)(h, PICK(h->loop, signal_trampoline, cb),
                                                 signum);
    return D9A_REAL(uv_signal_start_oneshot)(h, cb, signum);
}

D9A_EXPORT int uv_fs_event_start(uv_fs_event_t *h, uv_fs_event_cb cb, const char *path,
                                 unsigned int flags) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, h->loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)fs_event_trampoline))
        return D9A_REAL(uv_fs_event_start)(h, PICK(h->loop, fs_event_trampoline, cb), path,
                                           flags);
    return D9A_REAL(uv_fs_event_start)(h, cb, path, flags);
}

D9A_EXPORT int uv_fs_poll_start(uv_fs_poll_t *h, uv_fs_poll_cb cb, const char *path,
                                unsigned int interval) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, h->loop, UV_ROLE_CB, (d9a_fn)cb, explicit_loc, (d9a_fn)fs_poll_trampoline))
        return D9A_REAL(uv_fs_poll_start)(h, fs_poll_trampoline, path, interval); /* always */
    return D9A_REAL(uv_fs_poll_start)(h, cb, path, interval);
}

/* Read-like registrations carry two callbacks; both are swapped or neither. */
static bool track_reader(const void *h, const uv_loop_t *loop, d9a_fn alloc_cb, d9a_fn cb,
                         const d9_loc *explicit_loc) {
    if (!h || !alloc_cb || !cb || !d9a_loop_recorded(loop)) return false;
    int rc = d9a_track(h, loop, UV_ROLE_CB, cb, explicit_loc);
    int rc_alloc = rc ? d9a_track(h, loop, UV_ROLE_ALLOC, alloc_cb, explicit_loc) : 0;
    if (rc == 2 || rc_alloc == 2 || !uv_handle_cell_valid(h)) d9a_uv_cell_refresh(h);
    return rc && rc_alloc;
}

D9A_EXPORT int uv_read_start(uv_stream_t *h, uv_alloc_cb alloc_cb, uv_read_cb read_cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (read_cb != read_trampoline && h &&
        track_reader(h, h->loop, (d9a_fn)alloc_cb, (d9a_fn)read_cb, explicit_loc)) {
        bool wrap = d9a_loop_wrapped(h->loop);
        int rc = D9A_REAL(uv_read_start)(h, wrap ? alloc_trampoline : alloc_cb,
                                         wrap ? read_trampoline : read_cb);
        if (rc == 0) watch_fd((const uv_handle_t *)h, D9A_FD_IN);
        return rc;
    }
    return D9A_REAL(uv_read_start)(h, alloc_cb, read_cb);
}

D9A_EXPORT int uv_listen(uv_stream_t *h, int backlog, uv_connection_cb cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && track(h, h->loop, UV_ROLE_LISTEN, (d9a_fn)cb, explicit_loc,
                   (d9a_fn)connection_trampoline)) {
        int rc = D9A_REAL(uv_listen)(h, backlog, PICK(h->loop, connection_trampoline, cb));
        if (rc == 0) watch_fd((const uv_handle_t *)h, D9A_FD_IN);
        return rc;
    }
    return D9A_REAL(uv_listen)(h, backlog, cb);
}

D9A_EXPORT int uv_udp_recv_start(uv_udp_t *h, uv_alloc_cb alloc_cb, uv_udp_recv_cb recv_cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (recv_cb != udp_recv_trampoline && h &&
        track_reader(h, h->loop, (d9a_fn)alloc_cb, (d9a_fn)recv_cb, explicit_loc)) {
        bool wrap = d9a_loop_wrapped(h->loop);
        int rc = D9A_REAL(uv_udp_recv_start)(h, wrap ? alloc_trampoline : alloc_cb,
                                             wrap ? udp_recv_trampoline : recv_cb);
        if (rc == 0) watch_fd((const uv_handle_t *)h, D9A_FD_IN);
        return rc;
    }
    return D9A_REAL(uv_udp_recv_start)(h, alloc_cb, recv_cb);
}

D9A_EXPORT int uv_spawn(uv_loop_t *loop, uv_process_t *h, const uv_process_options_t *options) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && options && options->exit_cb != exit_trampoline &&
        track(h, loop, UV_ROLE_CB, (d9a_fn)options->exit_cb, explicit_loc, NULL)) {
        uv_process_options_t copy = *options;
        copy.exit_cb = PICK(loop, exit_trampoline, options->exit_cb);
        return D9A_REAL(uv_spawn)(loop, h, &copy);
    }
    return D9A_REAL(uv_spawn)(loop, h, options);
}

/* Whether a close of `h` goes through the trampoline: while its loop's handles hold theirs,
 * while anything records (its close callback is a poll), and always for a handle whose
 * trampoline stays in libuv (uv_fs_poll). Otherwise a tracked handle's entry simply goes at
 * uv_close: libuv runs no other callback of a handle after that. */
static bool close_traced(const uv_handle_t *h) {
    return D9__ACTIVE() || d9a_loop_wrapped(h->loop) || h->type == UV_FS_POLL;
}

/* A handle that is tracked closes through the trampoline (the adapter must learn that it is
 * gone); an untracked one is tracked here only if it has a close callback to record. */
static bool track_close(uv_handle_t *h, uv_close_cb cb, const d9_loc *explicit_loc) {
    if (!h || cb == close_trampoline) return false;
    if (d9a_table_contains(h)) {
        int rc = d9a_table_set_callback(h, h->loop, UV_ROLE_CLOSE, (d9a_fn)cb,
                                        d9a_loc_for((const void *)cb, explicit_loc));
        d9a_uv_cell_refresh(h);
        return rc >= 0;
    }
    return track(h, h->loop, UV_ROLE_CLOSE, (d9a_fn)cb, explicit_loc, (d9a_fn)close_trampoline);
}

/* libuv closes the fd inside uv_close: it stops being the handle's before it can be reused.
 * Returns the handle's task (0: not tracked). */
static uint64_t unwatch_fd(const uv_handle_t *h) {
    uv_os_fd_t fd;
    uint64_t task = d9a_table_task(h);
    if (task && D9A_REAL(uv_fileno)(h, &fd) == 0) d9a_fd_unwatch(fd, task);
    return task;
}

D9A_EXPORT void uv_close(uv_handle_t *h, uv_close_cb cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    uint64_t task = h ? unwatch_fd(h) : 0;
    if (h && cb != close_trampoline && !close_traced(h)) {
        if (task) {
            d9a_untrack(h);
            uv_handle_cell_clear(h);
        }
        D9A_REAL(uv_close)(h, cb);
        return;
    }
    if (track_close(h, cb, explicit_loc)) {
        D9A_REAL(uv_close)(h, close_trampoline);
        return;
    }
    D9A_REAL(uv_close)(h, cb);
}

D9A_EXPORT int uv_tcp_close_reset(uv_tcp_t *h, uv_close_cb cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (h && cb != close_trampoline && !close_traced((uv_handle_t *)h)) {
        int rc = D9A_REAL(uv_tcp_close_reset)(h, cb);
        if (rc == 0 && d9a_table_contains(h)) d9a_untrack(h); /* (libuv's uv_close did it?) */
        if (rc == 0) uv_handle_cell_clear((uv_handle_t *)h);
        return rc;
    }
    if (track_close((uv_handle_t *)h, cb, explicit_loc)) {
        int rc = D9A_REAL(uv_tcp_close_reset)(h, close_trampoline);
        /* on failure libuv did not start closing: keep the handle tracked as it was */
        if (rc < 0) {
            d9a_table_set_callback(h, h->loop, UV_ROLE_CLOSE, NULL, NULL);
            d9a_uv_cell_refresh(h);
        }
        return rc;
    }
    return D9A_REAL(uv_tcp_close_reset)(h, cb);
}

/* ---------------------------------------------------------------- lazy wrapping */

/* One callback field of libuv: the trampoline `tramp` in place of the application's `app`
 * (wrap), or back. A field that holds neither is left alone: a stream that stopped reading
 * holds no callbacks, and a registration that raced the swap already holds the right one. */
static void swap_field(void *field, d9a_fn app, d9a_fn tramp, bool wrap) {
    d9a_fn cur;
    memcpy(&cur, field, sizeof cur);
    if (!app || cur != (wrap ? app : tramp)) return;
    d9a_fn next = wrap ? tramp : app;
    memcpy(field, &next, sizeof next);
}

#define SWAP(field, role, tramp) swap_field(&(field), obj->fn[role], (d9a_fn)(tramp), wrap)

void d9a_uv_swap_callbacks(uv_handle_t *h, const d9a_object *obj, bool wrap) {
    switch (h->type) {
    case UV_TIMER: SWAP(((uv_timer_t *)h)->timer_cb, UV_ROLE_CB, timer_trampoline); break;
    case UV_IDLE: SWAP(((uv_idle_t *)h)->idle_cb, UV_ROLE_CB, idle_trampoline); break;
    case UV_PREPARE: SWAP(((uv_prepare_t *)h)->prepare_cb, UV_ROLE_CB, prepare_trampoline); break;
    case UV_CHECK: SWAP(((uv_check_t *)h)->check_cb, UV_ROLE_CB, check_trampoline); break;
    case UV_ASYNC: SWAP(((uv_async_t *)h)->async_cb, UV_ROLE_CB, async_trampoline); break;
    case UV_POLL: SWAP(((uv_poll_t *)h)->poll_cb, UV_ROLE_CB, poll_trampoline); break;
    case UV_SIGNAL: SWAP(((uv_signal_t *)h)->signal_cb, UV_ROLE_CB, signal_trampoline); break;
    case UV_FS_EVENT: SWAP(((uv_fs_event_t *)h)->cb, UV_ROLE_CB, fs_event_trampoline); break;
    case UV_PROCESS: SWAP(((uv_process_t *)h)->exit_cb, UV_ROLE_CB, exit_trampoline); break;
    case UV_TCP:
    case UV_NAMED_PIPE:
    case UV_TTY: {
        uv_stream_t *st = (uv_stream_t *)h;
        SWAP(st->read_cb, UV_ROLE_CB, read_trampoline);
        SWAP(st->alloc_cb, UV_ROLE_ALLOC, alloc_trampoline);
        SWAP(st->connection_cb, UV_ROLE_LISTEN, connection_trampoline);
        break;
    }
    case UV_UDP: {
        uv_udp_t *u = (uv_udp_t *)h;
        SWAP(u->recv_cb, UV_ROLE_CB, udp_recv_trampoline);
        SWAP(u->alloc_cb, UV_ROLE_ALLOC, alloc_trampoline);
        break;
    }
    default: break; /* uv_fs_poll: always wrapped */
    }
    /* a closing handle keeps close_trampoline: its entry goes when the close completes */
}
