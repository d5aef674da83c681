/* dial9 for libevent 2.1: record what an event base does, with one call per base.
 *
 *   struct event_base *base = event_base_new();
 *   d9_event_instrument(base, "io");    // the thread running this base becomes worker "io" #0
 *   struct event *ev = event_new(base, fd, EV_READ | EV_PERSIST, on_readable, conn);
 *   ...
 *   event_base_dispatch(base);
 *
 * Link with -ldial9-event BEFORE libevent (e.g. `cc app.c -ldial9-event -ldial9 -levent`, or
 * before -levent_core / -levent_pthreads): the adapter defines event_assign, event_new,
 * bufferevent_setcb... itself and forwards to libevent, so it must come first in the dynamic
 * linker's lookup order. Works with the shared libevent only.
 *
 * What is recorded for an instrumented base (see docs/adapters.md):
 *   - the thread that runs it (event_base_loop / event_base_dispatch) is worker (name, index);
 *   - park / unpark around its blocking epoll_wait (the default epoll backend);
 *   - every callback invocation is a poll of the task of its event (task id = the struct
 *     event's address), bufferevent (its address) or listener, located at the callback's
 *     function name; libevent's internal callbacks (a bufferevent's socket I/O) are polls of
 *     their own events, interrupted while the application's callback runs;
 *   - events spawn when created / assigned, terminate when freed (event_free,
 *     event_debug_unassign, a new assignment, or the base being freed); bufferevents and
 *     listeners spawn at their first callback and terminate when freed;
 *   - event_active (from any thread) wakes the event's task.
 * Your callbacks receive exactly their own arguments, and event_get_callback,
 * event_get_callback_arg, event_get_assignment and bufferevent_getcb return what you set.
 * Events assigned before the base was instrumented are not recorded.
 */
#ifndef DIAL9_EVENT_H
#define DIAL9_EVENT_H

#include <event2/event.h>

#include "dial9/dial9.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Record `base` under worker name `name` (copied; NULL means "libevent"). Call it once, right
 * after creating the base, on any thread. Returns 0, or -1 when base is NULL or 256 bases are
 * instrumented already. */
int d9_event_instrument(struct event_base *base, const char *name);

/* The callbacks passed to the next libevent call of this thread are located at `loc` instead
 * of their function names: d9_event_location(D9_HERE); ev = event_new(...); */
void d9_event_location(const d9_loc *loc);

#ifdef __cplusplus
}
#endif
#endif
