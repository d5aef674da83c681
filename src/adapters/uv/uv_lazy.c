/* libuv's handles hold the trampolines only while recording (lazy_wrap.h): on the loop's
 * thread, when recording started or stopped, every tracked handle of the loop gets its
 * trampolines in place of the application's callbacks, or its own callbacks back. Requests
 * are not swapped (nor in the table: uv_request_cell.h): they are tracked only while
 * recording, and one in flight when it stops completes through its trampoline. */
#include "lazy_wrap.h"
#include "uv_adapter.h"

typedef struct sweep {
    const void *loop;
    bool wrap;
} sweep;

/* Under the entry's shard lock: only libuv's fields change, never the table. */
static void swap_one(const void *key, const d9a_object *obj, void *ctx) {
    const sweep *sw = ctx;
    if (obj->loop != sw->loop) return;
    d9a_uv_swap_callbacks((uv_handle_t *)key, obj, sw->wrap);
}

static void sync_loop(const void *loop) {
    _Atomic bool *w = d9a_self.lazy_wrapped;
    sweep sw = {loop, D9__ACTIVE() != 0};
    d9a_table_each(swap_one, &sw);
    atomic_store_explicit(w, sw.wrap, memory_order_relaxed);
}

void d9a_uv_lazy_enter(const uv_loop_t *loop) { d9a_lazy_enter(d9a_loop_wrap_flag(loop), sync_loop); }
