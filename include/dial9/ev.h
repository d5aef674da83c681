/* dial9 for libev 4: record what a libev loop does, with one call per loop.
 *
 *   struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
 *   d9_ev_instrument(loop, "io");       // the thread running this loop becomes worker "io" #0
 *   ev_io_init(&w, on_readable, fd, EV_READ);
 *   ev_io_start(loop, &w);              // recorded as task &w, location "on_readable"
 *   ev_run(loop, 0);
 *
 * Link with -ldial9-ev BEFORE -lev (e.g. `cc app.c -ldial9-ev -ldial9 -lev`): the adapter
 * defines ev_io_start, ev_timer_stop, ev_run... itself and forwards to libev, so it must come
 * first in the dynamic linker's lookup order. Works with the shared libev only (EV_MULTIPLICITY,
 * as Debian builds it).
 *
 * What is recorded for an instrumented loop (see docs/adapters.md):
 *   - the thread that runs it (ev_run) is worker (name, index);
 *   - park / unpark exactly around its backend poll, through ev_set_loop_release_cb (your own
 *     release/acquire callbacks, set before or after, still run);
 *   - every watcher callback invocation is a poll of the watcher's task (task id = the
 *     watcher's address), located at the callback's function name; ev_once callbacks are
 *     tasks of their own;
 *   - a watcher spawns when started and terminates when stopped (a one-shot timer that libev
 *     stops terminates after its callback; restarted from it, the task goes on);
 *   - ev_async_send wakes the async watcher's task.
 * While a watcher is active, w->cb (ev_cb) is dial9's trampoline; your callback is restored
 * when it stops. w->data is never touched. Watchers started before the loop was instrumented
 * are not recorded; ev_set_cb on an active watcher bypasses recording until it restarts.
 */
#ifndef DIAL9_EV_H
#define DIAL9_EV_H

#include <ev.h>

#include "dial9/dial9.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Record `loop` under worker name `name` (copied; NULL means "libev"). Call it once, right
 * after creating the loop, on any thread while the loop is not running. Returns 0, or -1 when
 * loop is NULL or 256 loops are instrumented already. */
int d9_ev_instrument(struct ev_loop *loop, const char *name);

/* The callbacks passed to the next libev call of this thread (ev_*_start, ev_once) are
 * located at `loc` instead of their function names. */
void d9_ev_location(const d9_loc *loc);

#ifdef __cplusplus
}
#endif
#endif
