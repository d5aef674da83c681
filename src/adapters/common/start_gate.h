/* A recorder that starts on a thread of its own (the zero-code shim starts it off the
 * program's path, preload_start.c) would miss a loop's first callbacks and requests: a short
 * program runs its whole loop in the milliseconds the start takes. So while that start is in
 * progress the shim sets the gate, and the loops' run functions and the request wrappers wait
 * at it before they look at whether anything records. With no start in progress (the
 * adapters' own d9_start, or the shim's start done) the gate is NULL: one load. */
#ifndef D9_ADAPTERS_START_GATE_H
#define D9_ADAPTERS_START_GATE_H

#include <stdatomic.h>

#include "real_symbol.h"

/* Waits (bounded) for the start in progress; set and cleared by the shim. */
D9A_HIDDEN extern void (*_Atomic d9a_start_gate)(void);

static inline void d9a_wait_for_start(void) {
    void (*gate)(void) = atomic_load_explicit(&d9a_start_gate, memory_order_acquire);
    if (__builtin_expect(gate != NULL, 0)) gate();
}

#endif
