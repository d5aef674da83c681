/* The loop: instrumenting it, parks through ev_set_loop_release_cb (chained with the
 * application's own callbacks, whether set before or after), the run wrapper that gives the
 * running thread its worker identity, and the end of a loop. */
#include <stdlib.h>

#include "dial9/ev.h"
#include "ev_adapter.h"
#include "start_gate.h"

typedef void (*loop_hook)(struct ev_loop *loop);

/* libev calls these right around its backend's blocking call (epoll_wait...). The park ends the
 * poll the turn's last callback owes, in one record (d9a_park_owing_end: its end is the park's
 * time); the unpark is owed to the first ready watcher libev feeds next (ev_watchers.c,
 * ready_wake), one record with its wake. What else the adapter records outside callbacks
 * writes the owed unpark first (d9a_pay_owed_unpark): a callback's start (a timer's, when no io
 * watcher was ready), the next park (a turn that recorded nothing), the deferred terminates
 * and the run's exit. Only the application's own acquire and release callbacks run between
 * (before the unpark is owed, after the park). */
static void release_hook(struct ev_loop *loop) {
    d9a_thread *s = &d9a_self;
    d9a_pay_owed_unpark(s);
    d9ev_flush_deferred(loop);
    if (s->depth == 0) d9a_park_owing_end(D9__ACTIVE() != 0);
    void *release = NULL, *acquire = NULL;
    if (d9a_loop_user_hooks(loop, &release, &acquire) && release) ((loop_hook)release)(loop);
}

static void acquire_hook(struct ev_loop *loop) {
    void *release = NULL, *acquire = NULL;
    if (d9a_loop_user_hooks(loop, &release, &acquire) && acquire) ((loop_hook)acquire)(loop);
    if (d9a_self.depth == 0) d9a_owe_unpark();
}

static void install_hooks(struct ev_loop *loop) {
    if (d9a_loop_test_and_set_flag(loop, D9_EV_HOOKS_INSTALLED)) return;
    D9A_REAL(ev_set_loop_release_cb)(loop, release_hook, acquire_hook);
}

D9A_EXPORT int d9_ev_instrument(struct ev_loop *loop, const char *name) {
    int rc = d9a_loop_instrument(loop, name, D9_EV_DEFAULT_NAME);
    if (rc == 0) install_hooks(loop);
    return rc;
}

D9A_EXPORT void d9_ev_location(const d9_loc *loc) { d9a_set_next_loc(loc); }

/* The application's release/acquire callbacks are kept per loop and called by dial9's. */
D9A_EXPORT void ev_set_loop_release_cb(struct ev_loop *loop, loop_hook release, loop_hook acquire) {
    d9a_loop_set_user_hooks(loop, (void *)release, (void *)acquire);
    if (d9a_loop_flag(loop, D9_EV_HOOKS_INSTALLED)) return; /* dial9's call them */
    D9A_REAL(ev_set_loop_release_cb)(loop, release, acquire);
}

D9A_EXPORT int ev_run(struct ev_loop *loop, int flags) {
    d9a_wait_for_start(); /* its first callbacks belong in the run */
    bool recorded = d9a_loop_recorded(loop);
    if (recorded) {
        d9a_loop_become_worker(loop, D9_EV_DEFAULT_NAME);
        install_hooks(loop);
    }
    d9a_run_scope scope;
    d9a_run_enter(&scope, loop, false);
    int rc = D9A_REAL(ev_run)(loop, flags);
    d9a_pay_owed_unpark(&d9a_self); /* a last turn that recorded nothing */
    d9ev_flush_deferred(loop);
    d9a_run_exit(&scope);
    return rc;
}

/* Watchers still wrapped get their callbacks back while they (and the loop) still exist:
 * the application may start them on another loop without initializing them again. */
D9A_EXPORT void ev_loop_destroy(struct ev_loop *loop) {
    d9ev_flush_deferred(loop);
    d9ev_release_watchers(loop);
    d9a_loop_forget(loop);
    D9A_REAL(ev_loop_destroy)(loop);
}
