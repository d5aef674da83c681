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
 * time); the unpark is owed to the turn's first callback, with the wake of the first ready
 * watcher libev feeds before it (ev_watchers.c, ready_wake): one hook call and one clock read
 * for the unpark, the wake and the callback's poll start (d9a_poll_enter,
 * d9__unpark_wake_ready_poll_begin). What else the adapter records first writes the owed unpark
 * (d9a_pay_owed_unpark): a second ready wake, the next park (a turn that recorded nothing), the
 * deferred terminates and the run's exit. Only the application's own acquire and release callbacks run between
 * (before the unpark is owed, after the park). */
/* The application's own release/acquire callbacks of the loop this thread ran last: both hooks
 * ask at every turn, and the registry's lookup (a hash probe, ~12 instructions) would be paid
 * twice a turn. g_user_hooks_gen moves at every change (ev_set_loop_release_cb, from any
 * thread) and when a loop is destroyed (a new loop may get its address), so a thread's entry is
 * good while its generation is the current one; a thread that runs several loops refills it
 * when it switches. initial-exec, as elsewhere in the adapter: no __tls_get_addr call. */
typedef struct user_hooks {
    const struct ev_loop *loop;
    uint32_t gen;
    loop_hook release, acquire;
} user_hooks;

static _Atomic uint32_t g_user_hooks_gen = 1; /* a thread's entry starts at 0: never current */
static __thread user_hooks t_user_hooks __attribute__((tls_model("initial-exec")));

static void user_hooks_changed(void) {
    atomic_fetch_add_explicit(&g_user_hooks_gen, 1, memory_order_acq_rel);
}

static __attribute__((noinline)) const user_hooks *user_hooks_refill(struct ev_loop *loop,
                                                                     uint32_t gen) {
    user_hooks *h = &t_user_hooks;
    void *release = NULL, *acquire = NULL;
    d9a_loop_user_hooks(loop, &release, &acquire);
    /* gen was read before the lookup: a change racing with it moves the generation again */
    *h = (user_hooks){loop, gen, (loop_hook)release, (loop_hook)acquire};
    return h;
}

static inline const user_hooks *user_hooks_of(struct ev_loop *loop) {
    const user_hooks *h = &t_user_hooks;
    uint32_t gen = atomic_load_explicit(&g_user_hooks_gen, memory_order_acquire);
    if (__builtin_expect(h->loop == loop && h->gen == gen, 1)) return h;
    return user_hooks_refill(loop, gen);
}

static void release_hook(struct ev_loop *loop) {
    d9a_thread *s = &d9a_self;
    d9a_pay_owed_unpark(s);
    d9ev_flush_deferred(loop);
    if (s->depth == 0) d9a_park_owing_end(D9__ACTIVE() != 0);
    loop_hook release = user_hooks_of(loop)->release;
    if (release) release(loop);
}

static void acquire_hook(struct ev_loop *loop) {
    loop_hook acquire = user_hooks_of(loop)->acquire;
    if (acquire) acquire(loop);
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
    user_hooks_changed();
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
    user_hooks_changed(); /* its address may be the next loop's */
    D9A_REAL(ev_loop_destroy)(loop);
}
