/* A tracked libuv request's own record: its completion callback, the callback of its pool
 * part, their locations and its task, kept in the request itself rather than in the side
 * table. uv_req_t's `reserved[6]` ("private") is read or written nowhere in libuv on unix
 * (checked in 1.44.2, the Debian version, and in libuv's main branch of 2026): the wrapper
 * writes the cell before it submits the request, the trampolines read it. A request lives
 * for one round trip, so a table entry cost an insert and a removal under a shard lock per
 * request (~250 instructions per uv_write on the demo server); this is a few stores and loads.
 *
 * The last word holds the request's address, scrambled: a trampoline that finds anything
 * else (the application overwrote the request while libuv held it) treats the callback as
 * lost, as a missing table entry was. The cell is copied in and out with memcpy: the memory's
 * declared type is libuv's void* array. */
#ifndef D9_ADAPTERS_UV_REQUEST_CELL_H
#define D9_ADAPTERS_UV_REQUEST_CELL_H

#include <stddef.h>
#include <string.h>

#include "uv_adapter.h"
#include "uv_handle_cell.h"

typedef struct uv_req_cell {
    d9a_fn done;            /* the completion callback (NULL: none, the task just ends) */
    const d9_loc *done_loc;
    union {
        struct {            /* a pool request's */
            d9a_fn pool;    /* the pool part (uv_queue_work's work_cb, libuv's fs work...) */
            const d9_loc *pool_loc;
        };
        struct {            /* a loop request's whose spawn waits (task 0: d9a_defer_spawn) */
            uint64_t issuer;
            uint64_t issued_at;
        };
    };
    uint64_t task;          /* 0: not spawned yet (the spawn waits for the loop's park) */
    uintptr_t check;        /* uv_req_cell_check(req) while the cell is live, else 0 */
} uv_req_cell;

_Static_assert(sizeof(uv_req_cell) <= sizeof(((uv_req_t *)0)->reserved),
               "a request's cell must fit in uv_req_t's reserved words (64-bit libuv)");

static inline uintptr_t uv_req_cell_check(const void *req) {
    return (uintptr_t)req ^ (uintptr_t)0x9d7c5e3a1b2f4d61ull;
}

static inline void *uv_req_cell_at(const void *req) { return ((uv_req_t *)req)->reserved; }

/* One word of the cell of `req` (field `f` of uv_req_cell), read or written alone: a copy of
 * the whole cell went through the stack. */
#define UV_REQ_WORD_GET(req, f, out)                                                       \
    memcpy(&(out), (const char *)uv_req_cell_at(req) + offsetof(uv_req_cell, f), sizeof(out))
#define UV_REQ_WORD_SET(req, f, in)                                                        \
    memcpy((char *)uv_req_cell_at(req) + offsetof(uv_req_cell, f), &(in), sizeof(in))

/* Fills in c->task (the task going on when the request's own completion resubmits it, else
 * a new id) and c->check, stores the cell in `req` and records the spawn. Never fails. */
static inline void uv_req_cell_track(void *req, uv_req_cell *c, const d9_loc *spawn_loc) {
    uint64_t cont = d9a_continued_task(req);
    c->task = cont ? cont : d9_task_id_new();
    c->check = uv_req_cell_check(req);
    memcpy(uv_req_cell_at(req), c, sizeof *c);
    d9a_spawn(req, c->task, spawn_loc);
}

/* The cell of `req` into *c; false when `req` holds none. */
static inline bool uv_req_cell_read(const void *req, uv_req_cell *c) {
    memcpy(c, uv_req_cell_at(req), sizeof *c);
    return __builtin_expect(c->check == uv_req_cell_check(req), 1);
}

/* The same, and the cell is no longer live (the request's last callback). */
static inline bool uv_req_cell_take(void *req, uv_req_cell *c) {
    if (!uv_req_cell_read(req, c)) return false;
    uintptr_t none = 0;
    memcpy((char *)uv_req_cell_at(req) + offsetof(uv_req_cell, check), &none, sizeof none);
    return true;
}

/* The pool part's callback, set once libuv has put its own work function in place. */
static inline void uv_req_cell_set_pool(void *req, d9a_fn pool) {
    memcpy((char *)uv_req_cell_at(req) + offsetof(uv_req_cell, pool), &pool, sizeof pool);
}

/* A request of the loop that runs on this thread (it completes there): its spawn waits for the
 * loop's park when d9a_defer_spawn says so, else as uv_req_cell_track. */
static inline void uv_req_cell_track_loop(void *req, const uv_loop_t *loop, d9a_fn done,
                                          const d9_loc *done_loc, void (*spawn)(void *req)) {
    uint64_t issuer, issued_at;
    if (!d9a_defer_spawn(req, loop, spawn, &issuer, &issued_at)) {
        uv_req_cell c = {.done = done, .done_loc = done_loc};
        uv_req_cell_track(req, &c, done_loc);
        return;
    }
    uint64_t task = 0;
    uintptr_t check = uv_req_cell_check(req);
    UV_REQ_WORD_SET(req, done, done);
    UV_REQ_WORD_SET(req, done_loc, done_loc);
    UV_REQ_WORD_SET(req, issuer, issuer);
    UV_REQ_WORD_SET(req, issued_at, issued_at);
    UV_REQ_WORD_SET(req, task, task);
    UV_REQ_WORD_SET(req, check, check);
}

/* The deferred spawn of loop request `req`, at the loop's park: its own task from now on. */
static inline void uv_req_cell_spawn_deferred(void *req) {
    uv_req_cell c;
    if (!uv_req_cell_read(req, &c) || c.task) return; /* completed (its cell taken) meanwhile */
    c.task = d9_task_id_new();
    memcpy((char *)uv_req_cell_at(req) + offsetof(uv_req_cell, task), &c.task, sizeof c.task);
    d9a_spawn(req, c.task, c.done_loc);
}

/* The submission failed: no callback will come. */
static inline void uv_req_cell_untrack(void *req) {
    uv_req_cell c;
    if (!uv_req_cell_take(req, &c)) return;
    if (c.task) d9a_terminate(req, c.task);
    else d9a_undefer(req); /* never spawned: nothing to record */
}

/* Whether the submitter of a deferred request is still alive at its completion: surely when
 * no task ended on the thread since the submission (d9a_deferred_task, one compare), else when
 * it is the task of the request's handle (`handle`; NULL: none) whose cell is still valid
 * (libuv runs a stream's write, shutdown and connect callbacks before its close callback,
 * which clears the cell): any task's end on the thread, another connection's or a pool
 * request's, fails the first check. Its task, or 0. */
static inline uint64_t uv_req_submitter(const void *handle, uint64_t issuer, uint64_t issued_at) {
    uint64_t alive = d9a_deferred_task(issuer, issued_at);
    if (alive || !issuer || !handle) return alive;
    return uv_handle_cell_task(handle) == issuer ? issuer : 0;
}

/* The completion: as d9a_final_callback_begin (trampoline.h), from the cell; handle: the
 * request's handle (NULL for a pool request). */
static inline bool uv_req_done_begin(void *req, const void *handle, d9a_fn *fn, d9a_frame *f) {
    uintptr_t check, none = 0;
    UV_REQ_WORD_GET(req, check, check);
    if (__builtin_expect(check != uv_req_cell_check(req), 0)) {
        d9a_lost_callback(req);
        *fn = NULL;
        return false;
    }
    UV_REQ_WORD_SET(req, check, none); /* taken: its last callback */
    d9a_fn done;
    const d9_loc *done_loc;
    uint64_t task;
    UV_REQ_WORD_GET(req, done, done);
    UV_REQ_WORD_GET(req, done_loc, done_loc);
    UV_REQ_WORD_GET(req, task, task);
    *fn = done;
    if (!task) { /* the spawn was deferred, and the loop has not parked since */
        uint64_t issuer, issued_at;
        UV_REQ_WORD_GET(req, issuer, issuer);
        UV_REQ_WORD_GET(req, issued_at, issued_at);
        d9a_undefer(req);
        issuer = uv_req_submitter(handle, issuer, issued_at);
        if (issuer || !done) {
            if (done) d9a_poll_enter(f, issuer, done_loc); /* a poll of its submitter */
            return done != NULL;
        }
        task = d9_task_id_new(); /* its submitter may have ended: a task of its own after all */
        d9a_spawn(req, task, done_loc);
    }
    if (!done) {
        d9a_terminate(req, task);
        return false;
    }
    d9a_poll_enter(f, task, done_loc);
    d9a_owe_terminate(f, req);
    return true;
}

#endif
