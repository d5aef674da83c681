/* Trampolines only while recording. An adapter whose loop library keeps callbacks where the
 * adapter can reach them (libuv: public handle fields) tracks its objects in the side table
 * as always, but lets the library hold the application's own callbacks while nothing
 * records: an idle loop calls them directly and pays nothing per callback. When recording
 * starts, the loop's own thread swaps the trampolines in (and out again when it stops), at
 * two points where the library is not in the middle of a dispatch: entering the run function,
 * and each time the loop's poller returns, before the loop runs what it returned. Only that
 * thread touches the fields, so the library never sees a half-changed object.
 *
 * The price: callbacks of the loop turn that was running when recording started are not in
 * the run (they would be, a moment later, in the next turn). A loop blocked in its poller
 * loses nothing: the swap happens as the poller returns. */
#ifndef D9_ADAPTERS_LAZY_WRAP_H
#define D9_ADAPTERS_LAZY_WRAP_H

#include "thread_state.h"

/* On the loop's thread, at one of the two points: swap if recording started or stopped since
 * the last swap. Costs a few loads and a predicted branch. */
static inline void d9a_lazy_check(void) {
    d9a_thread *s = &d9a_self;
    _Atomic bool *w = s->lazy_wrapped;
    if (w && (D9__ACTIVE() != 0) != atomic_load_explicit(w, memory_order_relaxed))
        s->lazy_sync(s->loop);
}

/* Entering the run function of `loop`, whose "wrapped" flag is `w` (d9a_loop_wrap_flag; NULL:
 * not recorded): `sync` swaps its trampolines in or out and sets *w to match d9__active. */
static inline void d9a_lazy_enter(_Atomic bool *w, void (*sync)(const void *loop)) {
    d9a_thread *s = &d9a_self;
    s->lazy_wrapped = w;
    s->lazy_sync = w ? sync : NULL;
    d9a_lazy_check();
}

#endif
