/* Requests that run on libuv's thread pool: uv_queue_work, uv_fs_* (with a callback),
 * uv_getaddrinfo, uv_getnameinfo, uv_random. Each is one task with two kinds of poll: the
 * work on a pool thread (a worker of runtime "uv-threadpool"), which ends by waking the task,
 * then the completion callback on the loop thread: the task visibly moves between threads.
 *
 * uv_queue_work hands libuv its work callback, so a trampoline takes its place. The others
 * run libuv's own work function (uv__fs_work...), which libuv stores in req->work_req.work
 * inside uv__work_submit and the pool reads after taking the pool mutex. The wrapper cannot
 * swap it before the call (libuv sets it) nor after (a pool thread may be running it), so it
 * swaps it at the one safe moment: when the submitting thread releases the pool mutex right
 * after queueing the request (uv_mutex_unlock, called through libuv's PLT). Verified against
 * libuv 1.44's threadpool.c; if the request does not look queued then, the pool part is
 * simply not recorded.
 *
 * Pool threads also park (uv_cond_wait while the queue is empty) and unpark. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "uv_request_cell.h"

typedef void (*work_fn)(struct uv__work *w);

/* A pool request being submitted on this thread, for uv_mutex_unlock. */
typedef struct pool_submit {
    const void *req;
    struct uv__work *work;
    const uv_loop_t *loop;
    work_fn trampoline;
    const d9_loc *op_loc;
} pool_submit;

static __thread pool_submit *t_submit __attribute__((tls_model("initial-exec")));
static __thread bool t_pool_worker __attribute__((tls_model("initial-exec")));
static _Atomic uint32_t g_pool_index;

static void become_pool_worker(void) {
    if (__builtin_expect(t_pool_worker, 1)) return;
    t_pool_worker = true;
    d9_worker_begin(D9_UV_POOL_RUNTIME, atomic_fetch_add(&g_pool_index, 1));
}

/* One run of a request's pool part, whatever its kind: a poll of the request's task, then a
 * wake of it (the completion will run on the loop's thread). The wake comes from the pool
 * thread once the poll is over, as libuv's does (uv_async_send after the work): no task runs
 * there then, so its waker is 0, not the task waking itself. */
static void run_in_pool(const void *req, void (*call)(const void *req, d9a_fn fn, void *arg),
                        void *arg) {
    uv_req_cell c;
    if (!uv_req_cell_read(req, &c) || !c.pool) {
        /* only if the application overwrote the request libuv holds: its work is lost */
        d9a_lost_callback(req);
        abort();
    }
    become_pool_worker();
    d9a_frame f;
    d9a_poll_enter(&f, c.task, c.pool_loc);
    call(req, c.pool, arg);
    d9a_poll_exit(&f);
    d9_wake(c.task);
}

static void call_libuv_work(const void *req, d9a_fn fn, void *w) {
    (void)req;
    ((work_fn)fn)(w);
}

#define POOL_TRAMPOLINE(name, req_t)                                                       \
    static void name(struct uv__work *w) {                                                 \
        const req_t *req = (const req_t *)((char *)w - offsetof(req_t, work_req));         \
        run_in_pool(req, call_libuv_work, w);                                              \
    }

POOL_TRAMPOLINE(fs_pool_trampoline, uv_fs_t)
POOL_TRAMPOLINE(getaddrinfo_pool_trampoline, uv_getaddrinfo_t)
POOL_TRAMPOLINE(getnameinfo_pool_trampoline, uv_getnameinfo_t)
POOL_TRAMPOLINE(random_pool_trampoline, uv_random_t)

/* Called by the submitting thread with the pool mutex held: the request is queued, no pool
 * thread can have taken it yet. */
static void claim_pool_part(pool_submit *p) {
    t_submit = NULL;
    struct uv__work *w = p->work;
    if (w->loop != p->loop || !w->work || w->work == p->trampoline) return;
    uv_req_cell_set_pool((void *)p->req, (d9a_fn)w->work);
    w->work = p->trampoline;
}

D9A_EXPORT void uv_mutex_unlock(uv_mutex_t *m) {
    pool_submit *p = t_submit;
    if (__builtin_expect(p != NULL, 0)) claim_pool_part(p);
    D9A_REAL(uv_mutex_unlock)(m);
}

D9A_EXPORT void uv_cond_wait(uv_cond_t *c, uv_mutex_t *m) {
    if (!t_pool_worker || d9a_self.depth) {
        D9A_REAL(uv_cond_wait)(c, m);
        return;
    }
    d9_park();
    D9A_REAL(uv_cond_wait)(c, m);
    d9_unpark();
}

/* ---------------------------------------------------------------- libuv-run pool requests */

static const d9_loc *op_location(const d9_loc *_Atomic *cache, const char *name) {
    const d9_loc *l = atomic_load_explicit(cache, memory_order_acquire);
    if (!l) {
        l = d9_loc_intern(name);
        atomic_store_explicit(cache, l, memory_order_release);
    }
    return l;
}

/* Start tracking a pool request whose work function libuv provides. False: pass through
 * (always while nothing records: see track_request in uv_requests.c). */
static bool pool_request_begin(pool_submit *p, const uv_loop_t *loop, void *req,
                               struct uv__work *w, d9a_fn cb, d9a_fn done_trampoline,
                               const d9_loc *explicit_loc, const d9_loc *op_loc,
                               work_fn trampoline) {
    if (!D9__ACTIVE()) return false;
    if (!req || !cb || !d9a_loop_recorded(loop)) return false;
    if ((d9a_fn)cb == done_trampoline) return false; /* libuv forwarding to itself */
    uv_req_cell c = {.done = cb, .done_loc = d9a_loc_for((const void *)cb, explicit_loc),
                     .pool_loc = explicit_loc ? explicit_loc : op_loc};
    uv_req_cell_track(req, &c, c.done_loc);
    *p = (pool_submit){req, w, loop, trampoline, c.pool_loc};
    t_submit = p;
    return true;
}

static int pool_request_end(void *req, int rc) {
    t_submit = NULL;
    if (rc < 0) uv_req_cell_untrack(req); /* refused at once: no callback will come */
    return rc;
}

static void fs_trampoline(uv_fs_t *req) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_req_done_begin(req, NULL, &fn, &f)) return;
    ((uv_fs_cb)fn)(req);
    d9a_poll_exit(&f);
}

/* uv_fs_X(loop, req, ..., cb): with a callback it runs on the pool; without, synchronously on
 * the caller (not recorded). `args` names `cb`, which is swapped for the trampoline. */
#define FS_WRAPPER(fname, params, args)                                                    \
    D9A_REQUEST_WRAPPER(int, fname, params, args) {                                        \
        static const d9_loc *_Atomic op_loc;                                               \
        const d9_loc *explicit_loc = d9a_take_next_loc();                                  \
        pool_submit sub;                                                                   \
        if (!cb || !pool_request_begin(&sub, loop, req, req ? &req->work_req : NULL,       \
                                       (d9a_fn)cb, (d9a_fn)fs_trampoline, explicit_loc,    \
                                       op_location(&op_loc, #fname), fs_pool_trampoline))  \
            return D9A_REAL(fname) args;                                                   \
        cb = fs_trampoline;                                                                \
        return pool_request_end(req, D9A_REAL(fname) args);                                \
    }

#define L uv_loop_t *loop, uv_fs_t *req
FS_WRAPPER(uv_fs_close, (L, uv_file file, uv_fs_cb cb), (loop, req, file, cb))
FS_WRAPPER(uv_fs_open, (L, const char *path, int flags, int mode, uv_fs_cb cb),
           (loop, req, path, flags, mode, cb))
FS_WRAPPER(uv_fs_read, (L, uv_file file, const uv_buf_t bufs[], unsigned int nbufs, int64_t offset,
                        uv_fs_cb cb), (loop, req, file, bufs, nbufs, offset, cb))
FS_WRAPPER(uv_fs_write, (L, uv_file file, const uv_buf_t bufs[], unsigned int nbufs,
                         int64_t offset, uv_fs_cb cb), (loop, req, file, bufs, nbufs, offset, cb))
FS_WRAPPER(uv_fs_unlink, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_copyfile, (L, const char *path, const char *new_path, int flags, uv_fs_cb cb),
           (loop, req, path, new_path, flags, cb))
FS_WRAPPER(uv_fs_mkdir, (L, const char *path, int mode, uv_fs_cb cb), (loop, req, path, mode, cb))
FS_WRAPPER(uv_fs_mkdtemp, (L, const char *tpl, uv_fs_cb cb), (loop, req, tpl, cb))
FS_WRAPPER(uv_fs_mkstemp, (L, const char *tpl, uv_fs_cb cb), (loop, req, tpl, cb))
FS_WRAPPER(uv_fs_rmdir, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_scandir, (L, const char *path, int flags, uv_fs_cb cb),
           (loop, req, path, flags, cb))
FS_WRAPPER(uv_fs_opendir, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_readdir, (L, uv_dir_t *dir, uv_fs_cb cb), (loop, req, dir, cb))
FS_WRAPPER(uv_fs_closedir, (L, uv_dir_t *dir, uv_fs_cb cb), (loop, req, dir, cb))
FS_WRAPPER(uv_fs_stat, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_fstat, (L, uv_file file, uv_fs_cb cb), (loop, req, file, cb))
FS_WRAPPER(uv_fs_lstat, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_statfs, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_rename, (L, const char *path, const char *new_path, uv_fs_cb cb),
           (loop, req, path, new_path, cb))
FS_WRAPPER(uv_fs_fsync, (L, uv_file file, uv_fs_cb cb), (loop, req, file, cb))
FS_WRAPPER(uv_fs_fdatasync, (L, uv_file file, uv_fs_cb cb), (loop, req, file, cb))
FS_WRAPPER(uv_fs_ftruncate, (L, uv_file file, int64_t offset, uv_fs_cb cb),
           (loop, req, file, offset, cb))
FS_WRAPPER(uv_fs_sendfile, (L, uv_file out_fd, uv_file in_fd, int64_t in_offset, size_t length,
                            uv_fs_cb cb), (loop, req, out_fd, in_fd, in_offset, length, cb))
FS_WRAPPER(uv_fs_access, (L, const char *path, int mode, uv_fs_cb cb), (loop, req, path, mode, cb))
FS_WRAPPER(uv_fs_chmod, (L, const char *path, int mode, uv_fs_cb cb), (loop, req, path, mode, cb))
FS_WRAPPER(uv_fs_fchmod, (L, uv_file file, int mode, uv_fs_cb cb), (loop, req, file, mode, cb))
FS_WRAPPER(uv_fs_utime, (L, const char *path, double atime, double mtime, uv_fs_cb cb),
           (loop, req, path, atime, mtime, cb))
FS_WRAPPER(uv_fs_futime, (L, uv_file file, double atime, double mtime, uv_fs_cb cb),
           (loop, req, file, atime, mtime, cb))
FS_WRAPPER(uv_fs_lutime, (L, const char *path, double atime, double mtime, uv_fs_cb cb),
           (loop, req, path, atime, mtime, cb))
FS_WRAPPER(uv_fs_link, (L, const char *path, const char *new_path, uv_fs_cb cb),
           (loop, req, path, new_path, cb))
FS_WRAPPER(uv_fs_symlink, (L, const char *path, const char *new_path, int flags, uv_fs_cb cb),
           (loop, req, path, new_path, flags, cb))
FS_WRAPPER(uv_fs_readlink, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_realpath, (L, const char *path, uv_fs_cb cb), (loop, req, path, cb))
FS_WRAPPER(uv_fs_chown, (L, const char *path, uv_uid_t uid, uv_gid_t gid, uv_fs_cb cb),
           (loop, req, path, uid, gid, cb))
FS_WRAPPER(uv_fs_fchown, (L, uv_file file, uv_uid_t uid, uv_gid_t gid, uv_fs_cb cb),
           (loop, req, file, uid, gid, cb))
FS_WRAPPER(uv_fs_lchown, (L, const char *path, uv_uid_t uid, uv_gid_t gid, uv_fs_cb cb),
           (loop, req, path, uid, gid, cb))
#undef L

static void getaddrinfo_trampoline(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_req_done_begin(req, NULL, &fn, &f)) return;
    ((uv_getaddrinfo_cb)fn)(req, status, res);
    d9a_poll_exit(&f);
}

D9A_REQUEST_WRAPPER(int, uv_getaddrinfo,
                    (uv_loop_t *loop, uv_getaddrinfo_t *req, uv_getaddrinfo_cb cb, const char *node,
                     const char *service, const struct addrinfo *hints),
                    (loop, req, cb, node, service, hints)) {
    static const d9_loc *_Atomic op_loc;
    const d9_loc *explicit_loc = d9a_take_next_loc();
    pool_submit sub;
    if (!cb || !pool_request_begin(&sub, loop, req, req ? &req->work_req : NULL, (d9a_fn)cb,
                                   (d9a_fn)getaddrinfo_trampoline, explicit_loc,
                                   op_location(&op_loc, "uv_getaddrinfo"),
                                   getaddrinfo_pool_trampoline))
        return D9A_REAL(uv_getaddrinfo)(loop, req, cb, node, service, hints);
    return pool_request_end(req, D9A_REAL(uv_getaddrinfo)(loop, req, getaddrinfo_trampoline,
                                                          node, service, hints));
}

static void getnameinfo_trampoline(uv_getnameinfo_t *req, int status, const char *hostname,
                                   const char *service) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_req_done_begin(req, NULL, &fn, &f)) return;
    ((uv_getnameinfo_cb)fn)(req, status, hostname, service);
    d9a_poll_exit(&f);
}

D9A_REQUEST_WRAPPER(int, uv_getnameinfo,
                    (uv_loop_t *loop, uv_getnameinfo_t *req, uv_getnameinfo_cb cb,
                     const struct sockaddr *addr, int flags),
                    (loop, req, cb, addr, flags)) {
    static const d9_loc *_Atomic op_loc;
    const d9_loc *explicit_loc = d9a_take_next_loc();
    pool_submit sub;
    if (!cb || !pool_request_begin(&sub, loop, req, req ? &req->work_req : NULL, (d9a_fn)cb,
                                   (d9a_fn)getnameinfo_trampoline, explicit_loc,
                                   op_location(&op_loc, "uv_getnameinfo"),
                                   getnameinfo_pool_trampoline))
        return D9A_REAL(uv_getnameinfo)(loop, req, cb, addr, flags);
    return pool_request_end(req, D9A_REAL(uv_getnameinfo)(loop, req, getnameinfo_trampoline,
                                                          addr, flags));
}

static void random_trampoline(uv_random_t *req, int status, void *buf, size_t buflen) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_req_done_begin(req, NULL, &fn, &f)) return;
    ((uv_random_cb)fn)(req, status, buf, buflen);
    d9a_poll_exit(&f);
}

D9A_REQUEST_WRAPPER(int, uv_random,
                    (uv_loop_t *loop, uv_random_t *req, void *buf, size_t buflen, unsigned flags,
                     uv_random_cb cb),
                    (loop, req, buf, buflen, flags, cb)) {
    static const d9_loc *_Atomic op_loc;
    const d9_loc *explicit_loc = d9a_take_next_loc();
    pool_submit sub;
    if (!cb || !pool_request_begin(&sub, loop, req, req ? &req->work_req : NULL, (d9a_fn)cb,
                                   (d9a_fn)random_trampoline, explicit_loc,
                                   op_location(&op_loc, "uv_random"),
                                   random_pool_trampoline))
        return D9A_REAL(uv_random)(loop, req, buf, buflen, flags, cb);
    return pool_request_end(req, D9A_REAL(uv_random)(loop, req, buf, buflen, flags,
                                                     random_trampoline));
}

/* ---------------------------------------------------------------- uv_queue_work */

static void call_work_cb(const void *req, d9a_fn fn, void *arg) {
    (void)arg;
    ((uv_work_cb)fn)((uv_work_t *)req);
}

static void work_trampoline(uv_work_t *req) { run_in_pool(req, call_work_cb, NULL); }

/* Always installed, even without an after_work_cb: it is how the adapter learns the end. */
static void after_work_trampoline(uv_work_t *req, int status) {
    d9a_fn fn;
    d9a_frame f;
    if (!uv_req_done_begin(req, NULL, &fn, &f)) return;
    ((uv_after_work_cb)fn)(req, status);
    d9a_poll_exit(&f);
}

D9A_REQUEST_WRAPPER(int, uv_queue_work,
                    (uv_loop_t *loop, uv_work_t *req, uv_work_cb work_cb,
                     uv_after_work_cb after_work_cb),
                    (loop, req, work_cb, after_work_cb)) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (!D9__ACTIVE() || !req || !work_cb || work_cb == work_trampoline || !d9a_loop_recorded(loop))
        return D9A_REAL(uv_queue_work)(loop, req, work_cb, after_work_cb);
    uv_req_cell c = {.done = (d9a_fn)after_work_cb,
                     .done_loc = d9a_loc_for((const void *)after_work_cb, explicit_loc),
                     .pool = (d9a_fn)work_cb,
                     .pool_loc = d9a_loc_for((const void *)work_cb, explicit_loc)};
    uv_req_cell_track(req, &c, c.pool_loc);
    int rc = D9A_REAL(uv_queue_work)(loop, req, work_trampoline, after_work_trampoline);
    if (rc < 0) uv_req_cell_untrack(req);
    return rc;
}
