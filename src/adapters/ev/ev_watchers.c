/* libev watchers. ev_TYPE_start swaps w->cb for a trampoline (the original goes to the side
 * table); ev_TYPE_stop puts it back, so a stopped watcher is exactly what the application
 * made. A watcher's task spawns at start and terminates at stop.
 *
 * libev also stops watchers itself right before feeding them one last event (a one-shot
 * timer in timers_reify, an io watcher on a bad fd in fd_kill). Such a stop (its return
 * address is inside libev) only defers the terminate; the ev_feed_event that follows wraps
 * the watcher again for that final callback, after which its task terminates (or goes on, if
 * the callback starts it again). Deferred terminates not claimed by a feed are written when
 * the loop next parks or leaves ev_run.
 *
 * The side table owns the watchers' entries; each change of one sets or clears the watcher's
 * cell (ev_watcher_cell.h), where the trampoline and the readiness wake read it. */
#include <stdlib.h>

#include "code_ranges.h"
#include "ev_adapter.h"
#include "ev_watcher_cell.h"

static void watcher_trampoline(struct ev_loop *loop, ev_watcher *w, int revents);

typedef void (*watcher_cb)(struct ev_loop *loop, ev_watcher *w, int revents);

/* ---------------------------------------------------------------- deferred terminates */

#define MAX_DEFERRED 16

typedef struct deferred {
    ev_watcher *w;
    const struct ev_loop *loop;
    const d9_loc *loc;
    uint64_t task;
} deferred;

/* initial-exec, as d9a_self: the default model calls __tls_get_addr at every access from a
 * shared library (~22 instructions a loop turn, the flush at each park) */
static __thread deferred t_deferred[MAX_DEFERRED] __attribute__((tls_model("initial-exec")));
static __thread int t_ndeferred __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) void flush_deferred(const struct ev_loop *loop) {
    int kept = 0;
    for (int i = 0; i < t_ndeferred; i++) {
        if (loop && t_deferred[i].loop != loop) t_deferred[kept++] = t_deferred[i];
        else d9a_terminate(t_deferred[i].w, t_deferred[i].task);
    }
    t_ndeferred = kept;
}

/* Every park asks, and there is seldom anything: the test before any frame (~17 instructions
 * a turn of saving and restoring registers for an empty list). */
void d9ev_flush_deferred(const struct ev_loop *loop) {
    if (__builtin_expect(t_ndeferred != 0, 0)) flush_deferred(loop);
}

static void defer_terminate(ev_watcher *w, const struct ev_loop *loop, const d9_loc *loc,
                            uint64_t task) {
    if (t_ndeferred == MAX_DEFERRED) {
        d9a_terminate(t_deferred[0].w, t_deferred[0].task);
        t_ndeferred--;
        for (int i = 0; i < t_ndeferred; i++) t_deferred[i] = t_deferred[i + 1];
    }
    t_deferred[t_ndeferred++] = (deferred){w, loop, loc, task};
}

/* Removes w from the deferred list; returns its location and task (*task 0 when it was not
 * there). */
static const d9_loc *claim_deferred(const ev_watcher *w, uint64_t *task) {
    *task = 0;
    for (int i = 0; i < t_ndeferred; i++) {
        if (t_deferred[i].w != w) continue;
        const d9_loc *loc = t_deferred[i].loc;
        *task = t_deferred[i].task;
        t_deferred[i] = t_deferred[--t_ndeferred];
        return loc;
    }
    return NULL;
}

/* ---------------------------------------------------------------- calls from inside libev */

static d9a_code_ranges g_libev_code;
static pthread_once_t g_libev_code_once = PTHREAD_ONCE_INIT;
/* Set once g_libev_code is filled: the test every feed makes, a load, where pthread_once is a
 * call (~5 instructions a feed, and a frame for it). */
static _Atomic bool g_libev_code_found;

static void find_libev_code(void) {
    d9a_code_ranges_of((const void *)D9A_REAL(ev_timer_stop), &g_libev_code);
    atomic_store_explicit(&g_libev_code_found, true, memory_order_release);
}

/* Out of line: the common path keeps no frame for the call. */
static __attribute__((noinline, cold)) void find_libev_code_once(void) {
    pthread_once(&g_libev_code_once, find_libev_code);
}

/* A call made by libev itself, or a callback of libev's own (its signal pipe, ev_once and
 * ev_stat helpers): those watchers are libev's business, not tasks of the application. */
static inline bool inside_libev(const void *address) {
    if (__builtin_expect(!atomic_load_explicit(&g_libev_code_found, memory_order_acquire), 0))
        find_libev_code_once();
    return d9a_in_code_ranges(&g_libev_code, address);
}

/* ---------------------------------------------------------------- the trampoline */

/* Entries whose `arg` is EV_FINAL are the watcher's last callback: its task ends after it. */
#define EV_FINAL ((void *)1)

/* A watcher without a cell (its two places taken by others): the side table's entry. Out of
 * line: the trampoline's common path keeps no frame for it. */
static __attribute__((noinline, cold)) bool table_callback(const ev_watcher *w, d9a_fn *fn,
                                                          const d9_loc **loc, bool *final,
                                                          uint64_t *task) {
    void *arg;
    if (!d9a_table_callback_arg(w, 0, fn, loc, &arg, task)) return false;
    *final = arg == EV_FINAL;
    return true;
}

static void watcher_trampoline(struct ev_loop *loop, ev_watcher *w, int revents) {
    d9a_fn fn;
    const d9_loc *loc;
    bool final;
    uint64_t task;
    const d9ev_cell *c = d9ev_cell_of(w);
    if (__builtin_expect(c != NULL, 1)) {
        fn = c->fn;
        loc = c->loc;
        task = c->task;
        final = c->final;
    } else if (!table_callback(w, &fn, &loc, &final, &task)) {
        fn = NULL;
    }
    if (__builtin_expect(!fn, 0)) {
        d9a_lost_callback(w);
        return;
    }
    /* the unpark owed since libev's acquire callback (with the turn's first ready wake) goes
     * with this callback's poll start: d9a_poll_enter, one hook call */
    d9a_frame f;
    if (final) {
        /* give the watcher back before the callback, which may start it again */
        d9a_table_take(w, NULL);
        d9ev_cell_clear(w);
        w->cb = (watcher_cb)fn;
        d9a_poll_enter(&f, task, loc);
        d9a_owe_terminate(&f, w);
    } else {
        d9a_poll_enter(&f, task, loc);
    }
    ((watcher_cb)fn)(loop, w, revents);
    d9a_poll_exit(&f);
}

/* ---------------------------------------------------------------- start / stop */

static __thread int t_in_once __attribute__((tls_model("initial-exec"))); /* ev_once's own watchers are not tasks of their own */

static void watcher_starting(struct ev_loop *loop, ev_watcher *w) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    if (!w || t_in_once) return;
    if (w->cb == watcher_trampoline) {
        /* started again before its final callback ran: it lives on */
        d9a_object o;
        if (d9a_table_get(w, &o) && o.arg == EV_FINAL) {
            o.arg = NULL;
            if (d9a_table_put(w, &o, NULL) >= 0) d9ev_cell_set(w, o.fn[0], o.loc[0], o.task, false);
        }
        return;
    }
    if (!w->cb || !d9a_loop_recorded(loop) || inside_libev((const void *)w->cb)) return;
    if (!d9a_track(w, loop, 0, (d9a_fn)w->cb, explicit_loc)) return;
    d9a_object o;
    if (d9a_table_get(w, &o)) d9ev_cell_set(w, o.fn[0], o.loc[0], o.task, o.arg == EV_FINAL);
    w->cb = watcher_trampoline;
}

static void watcher_stopped(const struct ev_loop *loop, ev_watcher *w, const void *caller) {
    if (!w) return;
    d9a_object o;
    if (w->cb != watcher_trampoline) {
        /* never wrapped, or the application replaced the callback (ev_set_cb) while active */
        if (d9a_table_contains(w) && d9a_table_take(w, &o)) {
            d9ev_cell_clear(w);
            d9a_terminate(w, o.task);
        }
        return;
    }
    if (ev_is_active(w)) return; /* not stopped (e.g. ev_timer_again re-armed it) */
    if (!d9a_table_take(w, &o)) return;
    d9ev_cell_clear(w);
    w->cb = (watcher_cb)o.fn[0];
    if (inside_libev(caller)) defer_terminate(w, loop, o.loc[0], o.task);
    else d9a_terminate(w, o.task);
}

/* libev feeds a watcher it just stopped, or the application feeds an inactive one: wrap it
 * for that one callback. */
static void rewrap_for_feed(struct ev_loop *loop, ev_watcher *w, const void *caller) {
    uint64_t task;
    const d9_loc *loc = claim_deferred(w, &task);
    bool deferred_here = task != 0;
    if (!deferred_here &&
        (ev_is_active(w) || t_in_once || inside_libev(caller) ||
         inside_libev((const void *)w->cb) || !d9a_loop_recorded(loop)))
        return;
    /* a deferred terminate goes on as the same task for this last callback */
    d9a_object o = {.task = deferred_here ? task : d9_task_id_new(), .loop = loop, .arg = EV_FINAL};
    o.fn[0] = (d9a_fn)w->cb;
    o.loc[0] = deferred_here ? loc : d9a_callback_loc((const void *)w->cb);
    if (d9a_table_put(w, &o, NULL) < 0) {
        if (deferred_here) d9a_terminate(w, task);
        return;
    }
    d9ev_cell_set(w, o.fn[0], o.loc[0], o.task, true);
    if (!deferred_here) d9a_spawn(w, o.task, o.loc[0]);
    w->cb = watcher_trampoline;
}

/* libev feeds io watchers whose fd its backend (epoll_wait...) just returned ready, between
 * its acquire hook (the unpark) and the callbacks: that is the readiness wake of the task. The
 * turn's first is written with the unpark the acquire hook owes (ev_loop.c). */
static void ready_wake(const ev_watcher *w, int revents, const void *caller) {
    if (!(revents & (EV_READ | EV_WRITE)) || d9a_self.depth || !inside_libev(caller)) return;
    const d9ev_cell *c = d9ev_cell_of(w);
    uint64_t task = c ? c->task : d9a_table_task(w);
    if (task) d9a_wake_ready_owing_unpark(task);
}

D9A_EXPORT void ev_feed_event(struct ev_loop *loop, void *watcher, int revents) {
    ev_watcher *w = watcher;
    const void *caller = __builtin_return_address(0);
    if (w && w->cb && w->cb != watcher_trampoline) rewrap_for_feed(loop, w, caller);
    if (w && D9__ACTIVE()) ready_wake(w, revents, caller);
    D9A_REAL(ev_feed_event)(loop, watcher, revents);
}

#define WRAP_WATCHER(type)                                                                 \
    D9A_EXPORT void ev_##type##_start(struct ev_loop *loop, ev_##type *w) {                \
        watcher_starting(loop, (ev_watcher *)w);                                           \
        D9A_REAL(ev_##type##_start)(loop, w);                                              \
    }                                                                                      \
    D9A_EXPORT void ev_##type##_stop(struct ev_loop *loop, ev_##type *w) {                 \
        D9A_REAL(ev_##type##_stop)(loop, w);                                               \
        watcher_stopped(loop, (ev_watcher *)w, __builtin_return_address(0));               \
    }

WRAP_WATCHER(io)
WRAP_WATCHER(timer)
WRAP_WATCHER(periodic)
WRAP_WATCHER(signal)
WRAP_WATCHER(child)
WRAP_WATCHER(stat)
WRAP_WATCHER(idle)
WRAP_WATCHER(prepare)
WRAP_WATCHER(check)
WRAP_WATCHER(embed)
WRAP_WATCHER(fork)
WRAP_WATCHER(cleanup)
WRAP_WATCHER(async)

/* ev_timer_again stops a non-repeating timer from inside libev, but at the application's
 * request: its terminate is not deferred. */
D9A_EXPORT void ev_timer_again(struct ev_loop *loop, ev_timer *w) {
    D9A_REAL(ev_timer_again)(loop, w);
    uint64_t task;
    claim_deferred((ev_watcher *)w, &task);
    if (task) d9a_terminate(w, task);
}

/* Called from any thread. */
D9A_EXPORT void ev_async_send(struct ev_loop *loop, ev_async *w) {
    if (D9__ACTIVE()) {
        uint64_t task = d9a_table_task(w);
        if (task) d9_wake(task);
    }
    D9A_REAL(ev_async_send)(loop, w);
}

/* ---------------------------------------------------------------- ev_once */

typedef void (*once_cb)(int revents, void *arg);

/* An ev_once callback is a task keyed by a token allocated here. */
static void once_trampoline(int revents, void *token) {
    d9a_object o;
    if (!d9a_table_take(token, &o)) {
        d9a_lost_callback(token);
        return;
    }
    d9a_pay_owed_unpark(&d9a_self);
    d9a_frame f;
    d9a_poll_enter(&f, o.task, o.loc[0]);
    d9a_owe_terminate(&f, token);
    ((once_cb)o.fn[0])(revents, o.arg);
    d9a_poll_exit(&f);
    free(token);
}

D9A_EXPORT void ev_once(struct ev_loop *loop, int fd, int events, ev_tstamp timeout,
                        void (*cb)(int revents, void *arg), void *arg) {
    const d9_loc *explicit_loc = d9a_take_next_loc();
    void *token = cb && d9a_loop_recorded(loop) ? malloc(1) : NULL;
    d9a_object o = {.loop = loop, .arg = arg, .flags = D9_EV_ONCE_TOKEN};
    o.fn[0] = (d9a_fn)cb;
    o.loc[0] = d9a_loc_for((const void *)cb, explicit_loc);
    if (!token || !d9a_track_new(token, &o, o.loc[0])) {
        free(token);
        D9A_REAL(ev_once)(loop, fd, events, timeout, cb, arg);
        return;
    }
    t_in_once++;
    D9A_REAL(ev_once)(loop, fd, events, timeout, once_trampoline, token);
    t_in_once--;
}

/* ---------------------------------------------------------------- end of a loop */

static void release_watcher(const void *key, const d9a_object *obj, void *ctx) {
    (void)ctx;
    d9_task_terminate(obj->task);
    if (obj->flags & D9_EV_ONCE_TOKEN) {
        free((void *)key); /* an ev_once that never fired */
        return;
    }
    ev_watcher *w = (ev_watcher *)key;
    d9ev_cell_clear(w);
    if (w->cb == watcher_trampoline) w->cb = (watcher_cb)obj->fn[0];
}

void d9ev_release_watchers(const struct ev_loop *loop) {
    d9a_table_take_loop(loop, release_watcher, NULL);
}
