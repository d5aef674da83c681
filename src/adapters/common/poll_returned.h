/* The loop's poller returned (epoll_wait / epoll_pwait, called by the loop's run function):
 * its unpark, the lazy swap of the trampolines (lazy_wrap.h), and the readiness wakes of what it
 * returned (ready_wakes.h), in that order. When the poller parked and no swap is due, the unpark
 * and the first ready task's wake are one hook call, one clock read and one ring record
 * (d9_unpark_wake_ready); the collector writes the same events as the separate calls. When that
 * wake is the only one (a server's usual return: one connection ready), or there is none (a
 * timer's turn), the two are owed to the first callback's poll instead (d9a_owe_unpark_wake,
 * thread_state.h): one hook call and one clock read for the three records, stamped at the
 * callback's start. A swap due (recording just started or stopped) keeps the separate calls:
 * its spawns stay between the unpark and the wakes, as they were. */
#ifndef D9_ADAPTERS_POLL_RETURNED_H
#define D9_ADAPTERS_POLL_RETURNED_H

#include <stdbool.h>
#include <sys/epoll.h>

#include "lazy_wrap.h"
#include "ready_wakes.h"
#include "thread_state.h"

/* `parked`: the call was a park (d9_park before it); `rc`: what it returned. Inlined in the
 * loop poll's wrapper: a call of its own saved registers and errno's pointer (+25 instructions
 * a poll, test_preload_shim_instructions). */
static inline __attribute__((always_inline)) void d9a_poll_returned(bool parked, const struct epoll_event *events, int rc) {
    _Atomic bool *w = d9a_self.lazy_wrapped;
    bool active = D9__ACTIVE() != 0;
    if (!parked || (w && active != atomic_load_explicit(w, memory_order_relaxed))) {
        if (parked) d9_unpark();
        else d9a_pay_owed_unpark(&d9a_self); /* the last return's, no callback since (a pause) */
        d9a_lazy_check();
        if (rc > 0 && D9__ACTIVE()) d9a_fd_ready(events, rc);
        return;
    }
    uint64_t first = 0, second = 0;
    int i = 0;
    if (active) {
        while (i < rc && !first) {
            d9a_fd_ready_tasks(&events[i++], &first, &second);
            if (!first) first = second, second = 0;
        }
    }
    if (active && !second && i >= rc) { /* no other wake to write: owed to the first callback */
        d9a_owe_unpark_wake(first);
        return;
    }
    d9_unpark_wake_ready(first);
    if (second) d9_wake_ready(second);
    if (active && i < rc) d9a_fd_ready(events + i, rc - i);
}

#endif
