/* libevent events. libevent calls event_assign through its PLT from event_new, event_set,
 * bufferevents, listeners and its own internals, so wrapping event_assign sees every event:
 * libevent is handed a trampoline and the event itself as argument, and the application's
 * callback and argument live in the side table (the getters are wrapped to return them). */
#include <stdlib.h>
#include <string.h>

#include "event_adapter.h"
#include "ready_wakes.h"

/* Inside event_base_once: its internal event is not recorded separately. */
static __thread int t_passthrough __attribute__((tls_model("initial-exec")));

/* libevent's argument is the event's cell (d9e_event_cell): read before the call, since the
 * callback may assign or free the event, and with it the cell. */
static void event_trampoline(evutil_socket_t fd, short what, void *cell) {
    const d9e_event_cell *c = cell;
    event_callback_fn fn = c->fn;
    void *arg = c->arg;
    d9a_frame f;
    d9a_poll_enter(&f, c->task, c->loc);
    fn(fd, what, arg);
    d9a_poll_exit(&f);
}

/* libevent's own events (a bufferevent's socket I/O, a listener's accept, the notify and
 * signal events, once events) are left alone: libevent reads their callback argument
 * itself (finalizers get it), so it must stay what libevent set. The application's
 * callbacks on top of them are wrapped where they are registered (bufferevent_setcb...). */
static bool libevent_internal(event_callback_fn cb) {
    return strncmp(d9a_callback_object((const void *)cb), "libevent", 8) == 0;
}

/* The task of event `ev` is over: its fd no longer wakes it. */
static void end_event(struct event *ev, const d9a_object *o) {
    d9a_fd_unwatch((int)D9A_REAL(event_get_fd)(ev), o->task);
    d9a_terminate(ev, o->task);
}

/* An assignment that is not recorded, or the event's end: an entry left for this address is
 * stale. Returns its cell, for the caller to free once libevent has let go of the event (a
 * callback running on the loop's thread still reads it until event_free's delete returns). */
static d9e_event_cell *forget_event(struct event *ev) {
    d9a_object o;
    if (!ev || !d9a_table_contains(ev) || !d9a_table_take(ev, &o)) return NULL;
    end_event(ev, &o);
    return d9e_cell_of(&o);
}

D9A_EXPORT int event_assign(struct event *ev, struct event_base *base, evutil_socket_t fd,
                            short events, event_callback_fn cb, void *arg) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (cb == event_trampoline) return D9A_REAL(event_assign)(ev, base, fd, events, cb, arg);
    if (!ev || !cb || t_passthrough || !d9a_loop_recorded(base) || libevent_internal(cb)) {
        d9e_event_cell *stale = forget_event(ev);
        int rc = D9A_REAL(event_assign)(ev, base, fd, events, cb, arg);
        free(stale);
        return rc;
    }
    if (arg == D9A_REAL(event_self_cbarg)()) arg = ev;
    d9e_event_cell *cell = malloc(sizeof *cell);
    if (!cell) return D9A_REAL(event_assign)(ev, base, fd, events, cb, arg);
    /* assigned again: a new task (the application may have freed and reused the memory) */
    d9a_object o = {.task = d9_task_id_new(), .loop = base, .arg = cell, .flags = EVENT_FLAG_CELL},
               old;
    o.fn[EVENT_ROLE_CB] = (d9a_fn)cb;
    o.loc[EVENT_ROLE_CB] = d9a_loc_for((const void *)cb, explicit_loc);
    *cell = (d9e_event_cell){.fn = cb, .arg = arg, .loc = o.loc[EVENT_ROLE_CB], .task = o.task};
    int put = d9a_table_put(ev, &o, &old);
    if (put < 0) {
        free(cell);
        return D9A_REAL(event_assign)(ev, base, fd, events, cb, arg);
    }
    if (put == 0) end_event(ev, &old); /* the previous task ends (its fd is still in ev) */
    d9a_spawn(ev, o.task, o.loc[EVENT_ROLE_CB]);
    int rc = D9A_REAL(event_assign)(ev, base, fd, events, event_trampoline, cell);
    /* the previous assignment's cell: libevent now holds the new one (assigning a pending
     * event is not allowed; from its own callback, the trampoline no longer reads it) */
    if (put == 0) free(d9e_cell_of(&old));
    if (rc < 0) {
        d9a_object mine;
        if (d9a_table_take(ev, &mine)) {
            d9a_terminate(ev, mine.task);
            free(d9e_cell_of(&mine));
        }
    } else if (!(events & EV_SIGNAL))
        d9a_fd_watch((int)fd, (events & EV_READ ? D9A_FD_IN : 0) | (events & EV_WRITE ? D9A_FD_OUT : 0),
                     o.task);
    return rc;
}

/* event_new allocates and calls event_assign through the PLT (tracked there). Should a
 * libevent build call it directly, the new event is assigned again here. */
D9A_EXPORT struct event *event_new(struct event_base *base, evutil_socket_t fd, short events,
                                   event_callback_fn cb, void *arg) {
    const d9_loc *explicit_loc = d9a_self.next_loc; /* left for the inner event_assign */
    struct event *ev = D9A_REAL(event_new)(base, fd, events, cb, arg);
    if (ev && cb && !t_passthrough && d9a_loop_recorded(base) && !libevent_internal(cb) &&
        D9A_REAL(event_get_callback)(ev) != event_trampoline) {
        d9a_set_next_loc(explicit_loc);
        if (arg == D9A_REAL(event_self_cbarg)()) arg = ev;
        event_assign(ev, base, fd, events, cb, arg);
    }
    d9a_take_next_loc();
    return ev;
}

D9A_EXPORT void event_free(struct event *ev) {
    d9e_event_cell *cell = forget_event(ev);
    D9A_REAL(event_free)(ev);
    free(cell);
}

D9A_EXPORT void event_debug_unassign(struct event *ev) {
    d9e_event_cell *cell = forget_event(ev);
    D9A_REAL(event_debug_unassign)(ev);
    free(cell);
}

/* libevent passes a finalizer the event's (swapped) argument: give it the application's. */
static void finalize_trampoline(struct event *ev, void *ignored) {
    (void)ignored;
    d9a_object o;
    if (!d9a_table_take(ev, &o)) {
        d9a_lost_callback(ev);
        return;
    }
    if (!o.fn[EVENT_ROLE_FINALIZE]) {
        free(d9e_cell_of(&o));
        d9a_lost_callback(ev);
        return;
    }
    d9a_fd_unwatch((int)D9A_REAL(event_get_fd)(ev), o.task);
    void *arg = d9e_app_arg(&o);
    free(d9e_cell_of(&o)); /* finalizing: libevent calls nothing else of this event */
    d9a_frame f;
    d9a_poll_enter(&f, o.task, o.loc[EVENT_ROLE_FINALIZE]);
    d9a_owe_terminate(&f, ev);
    ((event_finalize_callback_fn)o.fn[EVENT_ROLE_FINALIZE])(ev, arg);
    d9a_poll_exit(&f);
}

static bool track_finalizer(struct event *ev, event_finalize_callback_fn cb) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (!ev || !cb || !d9a_table_contains(ev)) return false;
    int rc = d9a_table_set_callback(ev, NULL, EVENT_ROLE_FINALIZE, (d9a_fn)cb,
                                    d9a_loc_for((const void *)cb, explicit_loc));
    if (rc == 1) d9a_table_take(ev, NULL); /* freed meanwhile by another thread */
    return rc == 0;
}

D9A_EXPORT int event_finalize(unsigned flags, struct event *ev, event_finalize_callback_fn cb) {
    if (track_finalizer(ev, cb)) return D9A_REAL(event_finalize)(flags, ev, finalize_trampoline);
    return D9A_REAL(event_finalize)(flags, ev, cb);
}

D9A_EXPORT int event_free_finalize(unsigned flags, struct event *ev,
                                   event_finalize_callback_fn cb) {
    if (track_finalizer(ev, cb))
        return D9A_REAL(event_free_finalize)(flags, ev, finalize_trampoline);
    return D9A_REAL(event_free_finalize)(flags, ev, cb);
}

/* ---------------------------------------------------------------- getters */

static bool tracked(const struct event *ev, d9a_object *o) {
    return ev && D9A_REAL(event_get_callback)(ev) == event_trampoline && d9a_table_get(ev, o);
}

D9A_EXPORT event_callback_fn event_get_callback(const struct event *ev) {
    d9a_object o;
    if (tracked(ev, &o)) return (event_callback_fn)o.fn[EVENT_ROLE_CB];
    return D9A_REAL(event_get_callback)(ev);
}

D9A_EXPORT void *event_get_callback_arg(const struct event *ev) {
    d9a_object o;
    if (tracked(ev, &o)) return d9e_app_arg(&o);
    return D9A_REAL(event_get_callback_arg)(ev);
}

D9A_EXPORT void event_get_assignment(const struct event *ev, struct event_base **base_out,
                                     evutil_socket_t *fd_out, short *events_out,
                                     event_callback_fn *callback_out, void **arg_out) {
    D9A_REAL(event_get_assignment)(ev, base_out, fd_out, events_out, callback_out, arg_out);
    d9a_object o;
    if ((callback_out || arg_out) && tracked(ev, &o)) {
        if (callback_out) *callback_out = (event_callback_fn)o.fn[EVENT_ROLE_CB];
        if (arg_out) *arg_out = d9e_app_arg(&o);
    }
}

/* ---------------------------------------------------------------- wakes */

D9A_EXPORT void event_active(struct event *ev, int res, short ncalls) {
    if (D9__ACTIVE()) {
        uint64_t task = d9a_table_task(ev);
        if (task) d9_wake(task);
    }
    D9A_REAL(event_active)(ev, res, ncalls);
}

/* ---------------------------------------------------------------- event_base_once */

/* A once event is a task of its own, keyed by a token allocated here (libevent's internal
 * event is not visible): spawned at the call, terminated after its callback. */
static void once_trampoline(evutil_socket_t fd, short what, void *token) {
    d9a_object o;
    if (!d9a_table_take(token, &o)) {
        d9a_lost_callback(token);
        return;
    }
    d9a_frame f;
    d9a_poll_enter(&f, o.task, o.loc[EVENT_ROLE_CB]);
    d9a_owe_terminate(&f, token);
    ((event_callback_fn)o.fn[EVENT_ROLE_CB])(fd, what, o.arg);
    d9a_poll_exit(&f);
    free(token);
}

D9A_EXPORT int event_base_once(struct event_base *base, evutil_socket_t fd, short events,
                               event_callback_fn cb, void *arg, const struct timeval *tv) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    void *token = cb && d9a_loop_recorded(base) ? malloc(1) : NULL;
    if (!token) return D9A_REAL(event_base_once)(base, fd, events, cb, arg, tv);
    d9a_object o = {.loop = base, .arg = arg, .flags = EVENT_FLAG_ONCE};
    o.fn[EVENT_ROLE_CB] = (d9a_fn)cb;
    o.loc[EVENT_ROLE_CB] = d9a_loc_for((const void *)cb, explicit_loc);
    if (!d9a_track_new(token, &o, o.loc[EVENT_ROLE_CB])) {
        free(token);
        return D9A_REAL(event_base_once)(base, fd, events, cb, arg, tv);
    }
    t_passthrough++;
    int rc = D9A_REAL(event_base_once)(base, fd, events, once_trampoline, token, tv);
    t_passthrough--;
    if (rc < 0) {
        d9a_untrack(token);
        free(token);
    }
    return rc;
}
