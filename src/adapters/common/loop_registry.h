/* The loops an adapter records: explicitly instrumented ones (d9_uv_instrument & co.), or
 * every loop once d9_adapters_instrument_all(true) was called (the zero-code preload shim).
 * Each instrumented loop has a name and an index (loops that share a name get 0, 1, 2...),
 * which become the worker identity (d9_worker_begin) of the thread that runs it. */
#ifndef D9_ADAPTERS_LOOP_REGISTRY_H
#define D9_ADAPTERS_LOOP_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "real_symbol.h"
#include "thread_state.h"

#define D9A_MAX_LOOPS 256

/* Record `loop` under `name` (copied; NULL means default_name). Instrumenting a loop again
 * renames it. Returns 0, or -1 when loop is NULL or D9A_MAX_LOOPS loops are registered. */
D9A_HIDDEN int d9a_loop_instrument(const void *loop, const char *name, const char *default_name);

/* fork(): hold (true) or release the registry's lock (fork_guard.c). */
D9A_HIDDEN void d9a_loops_fork_hold(bool hold);

/* The loop is gone (closed, freed, destroyed): forget it. */
D9A_HIDDEN void d9a_loop_forget(const void *loop);

/* Whether callbacks registered on `loop` are recorded. Cheap: a global flag, then a one-entry
 * per-thread cache, then a scan of the registered loops. */
D9A_HIDDEN bool d9a_loop_recorded_slow(const void *loop);
D9A_HIDDEN extern _Atomic int d9a_all_loops;
D9A_HIDDEN extern _Atomic uint32_t d9a_loops_generation;

static inline bool d9a_loop_recorded(const void *loop) {
    if (__builtin_expect(atomic_load_explicit(&d9a_all_loops, memory_order_relaxed), 0))
        return true;
    d9a_thread *s = &d9a_self;
    if (s->cache_loop == loop &&
        s->cache_gen == atomic_load_explicit(&d9a_loops_generation, memory_order_acquire))
        return s->cache_recorded;
    return d9a_loop_recorded_slow(loop);
}

/* The flag that says whether the objects of the recorded `loop` hold the trampolines now
 * (lazy_wrap.h), NULL while the loop is not recorded or not registered yet (all-loops mode
 * registers a loop when it first runs). The thread that runs the loop is the one that
 * changes it. */
static inline _Atomic bool *d9a_loop_wrap_flag(const void *loop) {
    d9a_thread *s = &d9a_self;
    if (s->cache_loop != loop ||
        s->cache_gen != atomic_load_explicit(&d9a_loops_generation, memory_order_acquire))
        d9a_loop_recorded_slow(loop);
    return s->cache_wrapped;
}

/* Whether a registration on `loop` gives the library the trampoline (true) or the
 * application's own callback, which the loop's thread swaps when recording starts. */
static inline bool d9a_loop_wrapped(const void *loop) {
    _Atomic bool *w = d9a_loop_wrap_flag(loop);
    return w && atomic_load_explicit(w, memory_order_relaxed);
}

/* On the thread that runs `loop`: take the loop's worker identity unless this thread already
 * has it (in all-loops mode an unregistered loop is registered under default_name first). */
D9A_HIDDEN void d9a_loop_become_worker(const void *loop, const char *default_name);

/* Two opaque words an adapter keeps per loop, whether or not it is instrumented (libev: the
 * application's own release/acquire callbacks, which dial9's are chained to). */
D9A_HIDDEN int d9a_loop_set_user_hooks(const void *loop, void *a, void *b);
D9A_HIDDEN bool d9a_loop_user_hooks(const void *loop, void **a, void **b);

/* Set flag `bit` (0..31) of a registered loop; returns its previous value (false also when
 * the loop is not registered). */
D9A_HIDDEN bool d9a_loop_test_and_set_flag(const void *loop, unsigned bit);
D9A_HIDDEN bool d9a_loop_flag(const void *loop, unsigned bit);

#endif
