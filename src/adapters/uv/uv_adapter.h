/* Internal to the libuv adapter: handles' callback roles in the side table and the loop-level
 * names. */
#ifndef D9_ADAPTERS_UV_ADAPTER_H
#define D9_ADAPTERS_UV_ADAPTER_H

#include <uv.h>

#include "trampoline.h"

/* Roles of a handle's callbacks. A stream that listens never reads, but the roles stay apart
 * so that a trampoline always finds a callback of its own signature. */
enum {
    UV_ROLE_CB = 0,     /* the handle's main callback (timer, read, recv, poll, exit...) */
    UV_ROLE_ALLOC = 1,  /* alloc_cb of a stream or udp handle */
    UV_ROLE_CLOSE = 2,  /* close_cb */
    UV_ROLE_LISTEN = 3, /* connection_cb */
};

/* Requests are not in the side table: each keeps its own cell (uv_request_cell.h). */

/* Lazy wrapping (lazy_wrap.h): swap the trampolines of handle `h`, tracked as `obj`, in
 * (wrap) or out (uv_handles.c); make `loop`, which this thread is about to run, follow the
 * recorder's state (uv_lazy.c). */
D9A_HIDDEN void d9a_uv_swap_callbacks(uv_handle_t *h, const d9a_object *obj, bool wrap);
D9A_HIDDEN void d9a_uv_lazy_enter(const uv_loop_t *loop);

#define D9_UV_DEFAULT_NAME "uv"
#define D9_UV_POOL_RUNTIME "uv-threadpool"

#endif
