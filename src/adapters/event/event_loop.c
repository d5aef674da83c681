/* The event base: instrumenting it, the loop wrappers that give the running thread its worker
 * identity and mark its epoll_wait as the base's park, and the end of a base. */
#include <stdlib.h>

#include "dial9/event.h"
#include "event_adapter.h"
#include "start_gate.h"

D9A_EXPORT int d9_event_instrument(struct event_base *base, const char *name) {
    int rc = d9a_loop_instrument(base, name, D9_EVENT_DEFAULT_NAME);
    if (rc == 0 && d9a_self.loop == base) d9a_self.park_on_epoll = true;
    return rc;
}

D9A_EXPORT void d9_event_location(const d9_loc *loc) { d9a_set_next_loc(loc); }

/* event_base_dispatch calls event_base_loop through the PLT: the inner scope just repeats the
 * outer one. */
D9A_EXPORT int event_base_loop(struct event_base *base, int flags) {
    d9a_wait_for_start(); /* its first callbacks belong in the run */
    bool recorded = d9a_loop_recorded(base);
    if (recorded) d9a_loop_become_worker(base, D9_EVENT_DEFAULT_NAME);
    d9a_run_scope scope;
    d9a_run_enter(&scope, base, recorded);
    int rc = D9A_REAL(event_base_loop)(base, flags);
    d9a_run_exit(&scope);
    return rc;
}

D9A_EXPORT int event_base_dispatch(struct event_base *base) {
    d9a_wait_for_start(); /* its first callbacks belong in the run */
    bool recorded = d9a_loop_recorded(base);
    if (recorded) d9a_loop_become_worker(base, D9_EVENT_DEFAULT_NAME);
    d9a_run_scope scope;
    d9a_run_enter(&scope, base, recorded);
    int rc = D9A_REAL(event_base_dispatch)(base);
    d9a_run_exit(&scope);
    return rc;
}

static void end_entry(const void *key, const d9a_object *obj, void *ctx) {
    (void)ctx;
    d9_task_terminate(obj->task);
    if (obj->flags & EVENT_FLAG_ONCE) free((void *)key); /* a once event that never ran */
    free(d9e_cell_of(obj)); /* the base is gone: nothing calls the event's trampoline again */
}

void d9e_forget_base(struct event_base *base) {
    d9a_table_take_loop(base, end_entry, NULL);
    d9a_loop_forget(base);
}

D9A_EXPORT void event_base_free(struct event_base *base) {
    D9A_REAL(event_base_free)(base);
    if (base) d9e_forget_base(base);
}

D9A_EXPORT void event_base_free_nofinalize(struct event_base *base) {
    D9A_REAL(event_base_free_nofinalize)(base);
    if (base) d9e_forget_base(base);
}
