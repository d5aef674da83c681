/* The body every trampoline shares: find the application's callback in the side table, open
 * a poll for the object's task (task id = the object's address), call, close the poll. */
#ifndef D9_ADAPTERS_TRAMPOLINE_H
#define D9_ADAPTERS_TRAMPOLINE_H

#include <stdint.h>

#include "callback_names.h"
#include "loop_registry.h"
#include "object_table.h"
#include "thread_state.h"

/* A callback of a live object. True with *fn set and a poll open (end it with
 * d9a_poll_exit); false when there is nothing to call. */
static inline bool d9a_callback_begin(const void *obj, unsigned role, d9a_fn *fn, d9a_frame *f) {
    const d9_loc *loc;
    if (__builtin_expect(!d9a_table_callback(obj, role, fn, &loc), 0)) {
        d9a_lost_callback(obj);
        return false;
    }
    if (!*fn) return false;
    d9a_poll_enter(f, (uintptr_t)obj, loc);
    return true;
}

/* The last callback of an object (a request completes, a handle's close callback): its entry
 * is removed before the application runs, since the callback may reuse or free the object,
 * and the task terminates after the poll. Returns false (after recording the terminate) when
 * there is no callback to call. */
static inline bool d9a_final_callback_begin(const void *obj, unsigned role, d9a_fn *fn,
                                            d9a_frame *f) {
    d9a_object o;
    if (__builtin_expect(!d9a_table_take(obj, &o), 0)) {
        d9a_lost_callback(obj);
        *fn = NULL;
        return false;
    }
    *fn = o.fn[role];
    if (!*fn) {
        d9a_terminate((uintptr_t)obj);
        return false;
    }
    d9a_poll_enter(f, (uintptr_t)obj, o.loc[role]);
    d9a_owe_terminate(f);
    return true;
}

/* Keep callback `fn` (role `role`) of the long-lived object `obj` of `loop`; a new object is
 * spawned as a task at the location of this callback. False when the table is full: the
 * caller then passes the application's callback through unchanged. */
static inline bool d9a_track(const void *obj, const void *loop, unsigned role, d9a_fn fn,
                             const d9_loc *explicit_loc) {
    const d9_loc *loc = d9a_loc_for((const void *)fn, explicit_loc);
    /* the same callback again (a timer restarted per request): nothing to write */
    d9a_fn have;
    const d9_loc *have_loc;
    if (d9a_table_callback(obj, role, &have, &have_loc) && have == fn && have_loc == loc)
        return true;
    int rc = d9a_table_set_callback(obj, loop, role, fn, loc);
    if (rc == 1) d9a_spawn((uintptr_t)obj, loc);
    return rc >= 0;
}

/* A new short-lived object (a request): replaces whatever was stored for its address. */
static inline bool d9a_track_new(const void *obj, const d9a_object *o, const d9_loc *spawn_loc) {
    if (d9a_table_put(obj, o, NULL) < 0) return false;
    d9a_spawn((uintptr_t)obj, spawn_loc);
    return true;
}

/* The registration failed: the object will never call back. */
static inline void d9a_untrack(const void *obj) {
    if (d9a_table_take(obj, NULL)) d9a_terminate((uintptr_t)obj);
}

#endif
