/* Bufferevents and connection listeners: their callbacks are what the application wrote, so
 * they are polls of their own (task id = the bufferevent or listener), interrupting the poll
 * of the internal event that calls them.
 *
 * A bufferevent's callbacks, their locations, its task and the application's argument go in
 * a cell (bev_cell) that libevent is given as the callback argument: its trampolines read it
 * instead of looking the bufferevent up in the side table. The side table stays the owner (of
 * the task, of the cell, freed with the entry). A cell is written once and freed when
 * bufferevent_setcb replaces it (bufferevent_free does so first): a trampoline reads it
 * whole before calling the application. That holds on the one thread a bufferevent without
 * BEV_OPT_THREADSAFE is used from; a thread-safe one may run its callbacks unlocked on one
 * thread while another replaces them, so it keeps the argument untouched and the trampolines
 * that look the side table up, as do bufferevents whose cell could not be allocated.
 * Listeners keep their argument and the table lookup. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "event_adapter.h"
#include "ready_wakes.h"

#define DATA_TRAMPOLINE(name, role)                                                        \
    static void name(struct bufferevent *bev, void *ctx) {                                 \
        d9a_fn fn;                                                                         \
        d9a_frame f;                                                                       \
        if (!d9a_callback_begin(bev, role, &fn, &f)) return;                               \
        ((bufferevent_data_cb)fn)(bev, ctx);                                               \
        d9a_poll_exit(&f);                                                                 \
    }

DATA_TRAMPOLINE(bev_read_trampoline, BEV_ROLE_READ)
DATA_TRAMPOLINE(bev_write_trampoline, BEV_ROLE_WRITE)

static void bev_event_trampoline(struct bufferevent *bev, short what, void *ctx) {
    d9a_fn fn;
    d9a_frame f;
    if (!d9a_callback_begin(bev, BEV_ROLE_EVENT, &fn, &f)) return;
    ((bufferevent_event_cb)fn)(bev, what, ctx);
    d9a_poll_exit(&f);
}

/* ---------------------------------------------------------------- through the cell */

typedef struct bev_cell {
    d9a_fn fn[BEV_ROLE_EVENT + 1];
    const d9_loc *loc[BEV_ROLE_EVENT + 1];
    uint64_t task;
    void *arg; /* the application's callback argument */
} bev_cell;

/* The cell's callback `role`; false (nothing to call) when it has none. The cell is read
 * before the call: the callback may replace it (bufferevent_setcb) or free the bufferevent.
 * Always inlined: gcc's choice, a copy out of line, cost ~10 instructions a callback. */
static inline __attribute__((always_inline)) bool cell_callback_begin(const bev_cell *c, unsigned role, d9a_fn *fn, void **arg,
                                       d9a_frame *f) {
    *fn = c->fn[role];
    *arg = c->arg;
    if (__builtin_expect(!*fn, 0)) return false;
    d9a_poll_enter(f, c->task, c->loc[role]);
    return true;
}

#define CELL_DATA_TRAMPOLINE(name, role)                                                   \
    static void name(struct bufferevent *bev, void *cell) {                                \
        d9a_fn fn;                                                                         \
        void *arg;                                                                         \
        d9a_frame f;                                                                       \
        if (!cell_callback_begin(cell, role, &fn, &arg, &f)) return;                       \
        ((bufferevent_data_cb)fn)(bev, arg);                                               \
        d9a_poll_exit(&f);                                                                 \
    }

CELL_DATA_TRAMPOLINE(bev_read_cell_trampoline, BEV_ROLE_READ)
CELL_DATA_TRAMPOLINE(bev_write_cell_trampoline, BEV_ROLE_WRITE)

static void bev_event_cell_trampoline(struct bufferevent *bev, short what, void *cell) {
    d9a_fn fn;
    void *arg;
    d9a_frame f;
    if (!cell_callback_begin(cell, BEV_ROLE_EVENT, &fn, &arg, &f)) return;
    ((bufferevent_event_cb)fn)(bev, what, arg);
    d9a_poll_exit(&f);
}

/* libevent's own getter of a bufferevent's options (exported by 2.1, not declared), looked
 * up once; without it every bufferevent counts as thread-safe (no cell). */
typedef int (*get_options_fn)(struct bufferevent *bev);
static get_options_fn g_get_options;
static pthread_once_t g_get_options_once = PTHREAD_ONCE_INIT;

static void find_get_options(void) {
    g_get_options = (get_options_fn)dlsym(RTLD_NEXT, "bufferevent_get_options_");
}

static bool single_threaded(struct bufferevent *bev) {
    pthread_once(&g_get_options_once, find_get_options);
    return g_get_options && !(g_get_options(bev) & BEV_OPT_THREADSAFE);
}

/* The cell of entry `o`, NULL if it has none. */
static bev_cell *cell_of(const d9a_object *o) {
    return o->flags & EVENT_FLAG_CELL ? o->arg : NULL;
}

/* ---------------------------------------------------------------- set and get */

static inline d9a_fn unwrap(d9a_fn fn, d9a_fn trampoline, d9a_fn cell_trampoline,
                            d9a_fn original) {
    return fn == trampoline || fn == cell_trampoline ? original : fn;
}

D9A_EXPORT void bufferevent_setcb(struct bufferevent *bev, bufferevent_data_cb readcb,
                                  bufferevent_data_cb writecb, bufferevent_event_cb eventcb,
                                  void *cbarg) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    bool any = readcb || writecb || eventcb;
    bool ours = readcb == bev_read_trampoline || writecb == bev_write_trampoline ||
                eventcb == bev_event_trampoline || readcb == bev_read_cell_trampoline ||
                writecb == bev_write_cell_trampoline || eventcb == bev_event_cell_trampoline;
    bool record = bev && !ours &&
                  (d9a_table_contains(bev) ||
                   (any && d9a_loop_recorded(D9A_REAL(bufferevent_get_base)(bev))));
    if (!record) {
        D9A_REAL(bufferevent_setcb)(bev, readcb, writecb, eventcb, cbarg);
        return;
    }
    d9a_object o = {.loop = D9A_REAL(bufferevent_get_base)(bev)};
    o.fn[BEV_ROLE_READ] = (d9a_fn)readcb;
    o.fn[BEV_ROLE_WRITE] = (d9a_fn)writecb;
    o.fn[BEV_ROLE_EVENT] = (d9a_fn)eventcb;
    const d9_loc *first = NULL;
    for (unsigned r = BEV_ROLE_READ; r <= BEV_ROLE_EVENT; r++) {
        o.loc[r] = d9a_loc_for((const void *)o.fn[r], explicit_loc);
        if (!first) first = o.loc[r];
    }
    bev_cell *cell = any && single_threaded(bev) ? malloc(sizeof *cell) : NULL;
    if (cell) {
        o.arg = cell;
        o.flags = EVENT_FLAG_CELL; /* freed with the entry, as an event's cell */
    }
    d9a_object old;
    int put = d9a_table_put(bev, &o, &old);
    if (put < 0) {
        free(cell);
        D9A_REAL(bufferevent_setcb)(bev, readcb, writecb, eventcb, cbarg);
        return;
    }
    if (put == 1) d9a_spawn(bev, o.task, first);
    /* its socket's readiness runs these callbacks (through libevent's internal events) */
    d9a_fd_watch((int)D9A_REAL(bufferevent_getfd)(bev),
                 (readcb || eventcb ? D9A_FD_IN : 0) | (writecb ? D9A_FD_OUT : 0), o.task);
    if (cell) {
        *cell = (bev_cell){.task = o.task, .arg = cbarg};
        for (unsigned r = BEV_ROLE_READ; r <= BEV_ROLE_EVENT; r++) {
            cell->fn[r] = o.fn[r];
            cell->loc[r] = o.loc[r];
        }
        D9A_REAL(bufferevent_setcb)(bev, readcb ? bev_read_cell_trampoline : NULL,
                                    writecb ? bev_write_cell_trampoline : NULL,
                                    eventcb ? bev_event_cell_trampoline : NULL, cell);
    } else {
        D9A_REAL(bufferevent_setcb)(bev, readcb ? bev_read_trampoline : NULL,
                                    writecb ? bev_write_trampoline : NULL,
                                    eventcb ? bev_event_trampoline : NULL, cbarg);
    }
    /* libevent no longer hands out the replaced cell; a trampoline of this thread that read
     * it is past reading */
    if (put == 0) free(cell_of(&old));
}

D9A_EXPORT void bufferevent_getcb(struct bufferevent *bev, bufferevent_data_cb *readcb_ptr,
                                  bufferevent_data_cb *writecb_ptr,
                                  bufferevent_event_cb *eventcb_ptr, void **cbarg_ptr) {
    bufferevent_data_cb readcb, writecb;
    bufferevent_event_cb eventcb;
    void *cbarg;
    D9A_REAL(bufferevent_getcb)(bev, &readcb, &writecb, &eventcb, &cbarg);
    d9a_object o;
    if (d9a_table_get(bev, &o)) {
        /* libevent holds the cell as the argument while a cell trampoline is set */
        if (cell_of(&o) && cbarg == o.arg &&
            (readcb == bev_read_cell_trampoline || writecb == bev_write_cell_trampoline ||
             eventcb == bev_event_cell_trampoline))
            cbarg = cell_of(&o)->arg;
        readcb = (bufferevent_data_cb)unwrap((d9a_fn)readcb, (d9a_fn)bev_read_trampoline,
                                             (d9a_fn)bev_read_cell_trampoline,
                                             o.fn[BEV_ROLE_READ]);
        writecb = (bufferevent_data_cb)unwrap((d9a_fn)writecb, (d9a_fn)bev_write_trampoline,
                                              (d9a_fn)bev_write_cell_trampoline,
                                              o.fn[BEV_ROLE_WRITE]);
        eventcb = (bufferevent_event_cb)unwrap((d9a_fn)eventcb, (d9a_fn)bev_event_trampoline,
                                               (d9a_fn)bev_event_cell_trampoline,
                                               o.fn[BEV_ROLE_EVENT]);
    }
    if (readcb_ptr) *readcb_ptr = readcb;
    if (writecb_ptr) *writecb_ptr = writecb;
    if (eventcb_ptr) *eventcb_ptr = eventcb;
    if (cbarg_ptr) *cbarg_ptr = cbarg;
}

/* bufferevent_free clears the callbacks first (through bufferevent_setcb), so none runs
 * after it; the memory may live on while libevent holds references. */
D9A_EXPORT void bufferevent_free(struct bufferevent *bev) {
    int fd = bev ? (int)D9A_REAL(bufferevent_getfd)(bev) : -1;
    D9A_REAL(bufferevent_free)(bev);
    d9a_object o;
    if (bev && d9a_table_take(bev, &o)) {
        d9a_fd_unwatch(fd, o.task);
        d9a_terminate(bev, o.task);
        free(cell_of(&o)); /* none: bufferevent_free's setcb cleared the callbacks first */
    }
}

/* ---------------------------------------------------------------- listeners */

static void listener_trampoline(struct evconnlistener *lev, evutil_socket_t fd,
                                struct sockaddr *addr, int socklen, void *ptr) {
    d9a_fn fn;
    d9a_frame f;
    if (!d9a_callback_begin(lev, LISTENER_ROLE_CB, &fn, &f)) return;
    ((evconnlistener_cb)fn)(lev, fd, addr, socklen, ptr);
    d9a_poll_exit(&f);
}

static void listener_error_trampoline(struct evconnlistener *lev, void *ptr) {
    d9a_fn fn;
    d9a_frame f;
    if (!d9a_callback_begin(lev, LISTENER_ROLE_ERROR, &fn, &f)) return;
    ((evconnlistener_errorcb)fn)(lev, ptr);
    d9a_poll_exit(&f);
}

/* evconnlistener_new_bind calls evconnlistener_new: only the outermost call tracks. */
static __thread int t_listener_depth __attribute__((tls_model("initial-exec")));

/* A new listener runs the application's callback until this swaps it (libevent has no way
 * to create one with a callback the adapter could key before the listener exists). */
static void track_new_listener(struct evconnlistener *lev, struct event_base *base,
                               evconnlistener_cb cb, void *ptr, const d9_loc *explicit_loc) {
    if (!lev || !cb || t_listener_depth || !d9a_loop_recorded(base)) return;
    if (d9a_track(lev, base, LISTENER_ROLE_CB, (d9a_fn)cb, explicit_loc)) {
        D9A_REAL(evconnlistener_set_cb)(lev, listener_trampoline, ptr);
        d9a_fd_watch((int)D9A_REAL(evconnlistener_get_fd)(lev), D9A_FD_IN, d9a_table_task(lev));
    }
}

D9A_EXPORT struct evconnlistener *evconnlistener_new(struct event_base *base, evconnlistener_cb cb,
                                                     void *ptr, unsigned flags, int backlog,
                                                     evutil_socket_t fd) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    t_listener_depth++;
    struct evconnlistener *lev = D9A_REAL(evconnlistener_new)(base, cb, ptr, flags, backlog, fd);
    t_listener_depth--;
    track_new_listener(lev, base, cb, ptr, explicit_loc);
    return lev;
}

D9A_EXPORT struct evconnlistener *evconnlistener_new_bind(struct event_base *base,
                                                          evconnlistener_cb cb, void *ptr,
                                                          unsigned flags, int backlog,
                                                          const struct sockaddr *sa, int socklen) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    t_listener_depth++;
    struct evconnlistener *lev =
        D9A_REAL(evconnlistener_new_bind)(base, cb, ptr, flags, backlog, sa, socklen);
    t_listener_depth--;
    track_new_listener(lev, base, cb, ptr, explicit_loc);
    return lev;
}

D9A_EXPORT void evconnlistener_set_cb(struct evconnlistener *lev, evconnlistener_cb cb, void *arg) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (lev && cb != listener_trampoline &&
        (d9a_table_contains(lev) ||
         (cb && d9a_loop_recorded(D9A_REAL(evconnlistener_get_base)(lev)))) &&
        d9a_track(lev, D9A_REAL(evconnlistener_get_base)(lev), LISTENER_ROLE_CB, (d9a_fn)cb,
                  explicit_loc)) {
        D9A_REAL(evconnlistener_set_cb)(lev, cb ? listener_trampoline : NULL, arg);
        return;
    }
    D9A_REAL(evconnlistener_set_cb)(lev, cb, arg);
}

D9A_EXPORT void evconnlistener_set_error_cb(struct evconnlistener *lev,
                                            evconnlistener_errorcb errorcb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (lev && errorcb && errorcb != listener_error_trampoline && d9a_table_contains(lev) &&
        d9a_track(lev, NULL, LISTENER_ROLE_ERROR, (d9a_fn)errorcb, explicit_loc)) {
        D9A_REAL(evconnlistener_set_error_cb)(lev, listener_error_trampoline);
        return;
    }
    D9A_REAL(evconnlistener_set_error_cb)(lev, errorcb);
}

D9A_EXPORT void evconnlistener_free(struct evconnlistener *lev) {
    int fd = lev ? (int)D9A_REAL(evconnlistener_get_fd)(lev) : -1;
    D9A_REAL(evconnlistener_free)(lev);
    d9a_object o;
    if (lev && d9a_table_take(lev, &o)) {
        d9a_fd_unwatch(fd, o.task);
        d9a_terminate(lev, o.task);
    }
}
