/* The body every trampoline shares: find the application's callback in the side table, open
 * a poll for the object's task (the entry's task id, d9_task_id_new: addresses are reused),
 * call, close the poll. */
#ifndef D9_ADAPTERS_TRAMPOLINE_H
#define D9_ADAPTERS_TRAMPOLINE_H

#include <stdint.h>

#include "callback_names.h"
#include "loop_registry.h"
#include "object_table.h"
#include "start_gate.h"
#include "thread_state.h"

/* A request-like registration while nothing records and no location waits for the next
 * registration (d9a_take_next_loc): it is not tracked, so the wrapper calls the library at
 * once, before any other work. A start in progress is waited for first (start_gate.h): a
 * request submitted meanwhile would otherwise be missing from the run. */
static inline bool d9a_pass_through(void) {
    if (D9__ACTIVE()) return false;
    d9a_wait_for_start();
    return !D9__ACTIVE() && __builtin_expect(d9a_self.next_loc == NULL, 1);
}

/* Defines wrapper `name` (returning `ret`, not void) of a request-like registration: straight
 * to the library while d9a_pass_through(), else the body that follows the macro, out of line,
 * so that the straight path is a few loads and a jump, without a stack frame:
 *   D9A_REQUEST_WRAPPER(int, uv_write, (uv_write_t *req, ...), (req, ...)) { ...tracked... } */
#define D9A_REQUEST_WRAPPER(ret, name, params, args)                                       \
    D9A_NEXT_DEFINE(ret, name, params, args)                                               \
    static __attribute__((noinline)) ret tracked_##name params;                            \
    D9A_EXPORT ret name params {                                                           \
        if (d9a_pass_through()) return D9A_NEXT(name, args);                               \
        return tracked_##name args;                                                        \
    }                                                                                      \
    static ret tracked_##name params

/* A callback of a live object. True with *fn set and a poll open (end it with
 * d9a_poll_exit); false when there is nothing to call. */
static inline bool d9a_callback_begin(const void *obj, unsigned role, d9a_fn *fn, d9a_frame *f) {
    const d9_loc *loc;
    uint64_t task;
    if (__builtin_expect(!d9a_table_callback(obj, role, fn, &loc, &task), 0)) {
        d9a_lost_callback(obj);
        return false;
    }
    if (!*fn) return false;
    d9a_poll_enter(f, task, loc);
    return true;
}

/* The last callback of an object (a request completes, a handle's close callback): its entry
 * is removed before the application runs, since the callback may reuse or free the object,
 * and the task terminates after the poll. Returns false (after recording the terminate) when
 * there is no callback to call. */
static inline bool d9a_final_callback_begin(const void *obj, unsigned role, d9a_fn *fn,
                                            d9a_frame *f) {
    const d9_loc *loc;
    uint64_t task;
    if (__builtin_expect(!d9a_table_take_callback(obj, role, fn, &loc, &task), 0)) {
        d9a_lost_callback(obj);
        *fn = NULL;
        return false;
    }
    if (!*fn) {
        d9a_terminate(obj, task);
        return false;
    }
    d9a_poll_enter(f, task, loc);
    d9a_owe_terminate(f, obj);
    return true;
}

/* Keep callback `fn` (role `role`) of the long-lived object `obj` of `loop`; a new object is
 * spawned as a task at the location of this callback. Returns 0 when the table is full (the
 * caller then passes the application's callback through unchanged), 1 when the entry already
 * held this callback and location (nothing written), 2 when the entry was written. */
static inline int d9a_track(const void *obj, const void *loop, unsigned role, d9a_fn fn,
                            const d9_loc *explicit_loc) {
    const d9_loc *loc = d9a_loc_for((const void *)fn, explicit_loc);
    /* the same callback again (a timer restarted per request): nothing to write */
    d9a_fn have;
    const d9_loc *have_loc;
    uint64_t task;
    if (d9a_table_callback(obj, role, &have, &have_loc, &task) && have == fn && have_loc == loc)
        return 1;
    task = d9a_continued_task(obj);
    int rc = d9a_table_set_callback_task(obj, loop, role, fn, loc, &task);
    if (rc == 1) d9a_spawn(obj, task, loc);
    return rc >= 0 ? 2 : 0;
}

/* A new short-lived object (a request): replaces whatever was stored for its address. */
static inline bool d9a_track_new(const void *obj, d9a_object *o, const d9_loc *spawn_loc) {
    uint64_t cont = d9a_continued_task(obj);
    o->task = cont ? cont : d9_task_id_new(); /* never the task of a stale entry it replaces */
    if (d9a_table_put(obj, o, NULL) < 0) return false;
    d9a_spawn(obj, o->task, spawn_loc);
    return true;
}

/* The registration failed: the object will never call back. */
static inline void d9a_untrack(const void *obj) {
    d9a_object o;
    if (d9a_table_take(obj, &o)) d9a_terminate(obj, o.task);
}

#endif
