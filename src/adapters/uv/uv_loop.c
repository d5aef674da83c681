/* The loop itself: instrumenting it, and the run / close wrappers that give the running
 * thread its worker identity and mark its epoll_wait as the loop's park. */
#include "dial9/uv.h"
#include "start_gate.h"
#include "uv_adapter.h"

D9A_EXPORT int d9_uv_instrument(uv_loop_t *loop, const char *name) {
    int rc = d9a_loop_instrument(loop, name, D9_UV_DEFAULT_NAME);
    /* instrumented from inside one of its own callbacks: its next poll is already a park, and
     * the place where its handles get their trampolines */
    if (rc == 0 && d9a_self.loop == loop) {
        d9a_self.park_on_epoll = true;
        d9a_uv_lazy_enter(loop);
    }
    return rc;
}

D9A_EXPORT void d9_uv_location(const d9_loc *loc) { d9a_set_next_loc(loc); }

D9A_EXPORT int uv_run(uv_loop_t *loop, uv_run_mode mode) {
    d9a_wait_for_start(); /* its first callbacks belong in the run */
    bool recorded = d9a_loop_recorded(loop);
    if (recorded) d9a_loop_become_worker(loop, D9_UV_DEFAULT_NAME);
    d9a_run_scope scope;
    d9a_run_enter(&scope, loop, recorded);
    if (recorded) d9a_uv_lazy_enter(loop);
    int rc = D9A_REAL(uv_run)(loop, mode);
    d9a_run_exit(&scope);
    return rc;
}

/* Objects still in the table when their loop goes away: libuv's internal handles (recorded
 * in all-loops mode), which end with the loop. */
static void end_task(const void *key, const d9a_object *obj, void *ctx) {
    (void)key;
    (void)ctx;
    d9_task_terminate(obj->task);
}

static void loop_gone(uv_loop_t *loop) {
    d9a_table_take_loop(loop, end_task, NULL);
    d9a_loop_forget(loop);
}

D9A_EXPORT int uv_loop_close(uv_loop_t *loop) {
    int rc = D9A_REAL(uv_loop_close)(loop);
    if (rc == 0) loop_gone(loop);
    return rc;
}

D9A_EXPORT void uv_loop_delete(uv_loop_t *loop) {
    D9A_REAL(uv_loop_delete)(loop);
    loop_gone(loop);
}
