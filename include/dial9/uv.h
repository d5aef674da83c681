/* dial9 for libuv: record what a libuv loop does, with one call per loop.
 *
 *   uv_loop_t *loop = uv_default_loop();
 *   d9_uv_instrument(loop, "io");       // this loop's thread becomes worker "io" #0
 *   ...uv_timer_start(&t, on_tick, 10, 10)...   // recorded as task &t, location "on_tick"
 *   uv_run(loop, UV_RUN_DEFAULT);
 *
 * Link with -ldial9-uv BEFORE -luv (e.g. `cc app.c -ldial9-uv -ldial9 -luv`): the adapter
 * defines uv_timer_start, uv_read_start, uv_run... itself and forwards to libuv, so it must
 * come first in the dynamic linker's lookup order. Works with the shared libuv only.
 *
 * What is recorded for an instrumented loop (see docs/adapters.md):
 *   - the thread that runs the loop (uv_run) is worker (name, index); index counts loops that
 *     share a name: 0, 1, 2...;
 *   - park / unpark around its blocking epoll_wait;
 *   - every callback invocation is a poll of the task of its handle or request (task id = the
 *     handle's or request's address), located at the callback's function name;
 *   - handles spawn at their first callback registration and terminate when closed; requests
 *     spawn when submitted and terminate after their callback;
 *   - uv_async_send wakes the async handle's task;
 *   - uv_queue_work, uv_fs_*, uv_getaddrinfo, uv_getnameinfo and uv_random requests run on
 *     libuv's pool threads as workers of runtime "uv-threadpool", then complete on the loop.
 * Your callbacks, `data` pointers and arguments are exactly what they would be without dial9;
 * only libuv's own copies of callback pointers (e.g. uv_fs_t.cb) name dial9's trampolines,
 * and the words libuv reserves and leaves unused on unix (uv_req_t.reserved, uv_handle_t's
 * u.reserved) hold dial9's bookkeeping while it tracks the request or handle.
 * Callbacks registered before the loop was instrumented are not recorded.
 */
#ifndef DIAL9_UV_H
#define DIAL9_UV_H

#include <uv.h>

#include "dial9/dial9.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Record `loop` under worker name `name` (copied; NULL means "uv"). Call it once, right after
 * creating the loop, on any thread. Instrumenting again renames the loop. Returns 0, or -1
 * when loop is NULL or 256 loops are instrumented already. */
int d9_uv_instrument(uv_loop_t *loop, const char *name);

/* The callbacks passed to the next libuv call of this thread are located at `loc` instead of
 * their function names: d9_uv_location(D9_HERE); uv_timer_start(&t, cb, 10, 0); */
void d9_uv_location(const d9_loc *loc);

#ifdef __cplusplus
}
#endif
#endif
