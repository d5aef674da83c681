/* The ends a pause still records (see pause_ends.h). */
#include "core/pause_ends.h"

#include <stdbool.h>
#include <stdint.h>

#include "dial9/dial9.h"

#define BITS (D9_PAUSED_POLL_ENDS | D9_PAUSED_UNPARKS)

static unsigned pause_number;   /* under the lifecycle lock */
static int settling_pause = -1; /* background thread's: the pause its drain count is of */
static unsigned drains_in_pause;

void d9_pause_ends_begin(void) {
    pause_number = (pause_number + 1) & 0x3fffffffu;
    __atomic_store_n(&d9__paused, (int)(pause_number << 2 | BITS), __ATOMIC_RELAXED);
}

void d9_pause_ends_clear(void) { __atomic_store_n(&d9__paused, 0, __ATOMIC_RELAXED); }

void d9_pause_ends_settle(d9_thread *const *threads, size_t count) {
    int seen = __atomic_load_n(&d9__paused, __ATOMIC_RELAXED);
    if (!(seen & BITS)) return;
    if (seen >> 2 != settling_pause) {
        settling_pause = seen >> 2;
        drains_in_pause = 0;
    }
    if (++drains_in_pause < 2) return;
    bool in_poll = false, parked = false;
    for (size_t i = 0; i < count; i++) {
        in_poll |= __atomic_load_n(&threads[i]->in_poll, __ATOMIC_RELAXED);
        parked |= __atomic_load_n(&threads[i]->parked, __ATOMIC_RELAXED);
    }
    int keep = (in_poll ? D9_PAUSED_POLL_ENDS : 0) | (parked ? D9_PAUSED_UNPARKS : 0);
    if ((seen & BITS) != keep) /* a resume or a new pause meanwhile wins */
        __atomic_compare_exchange_n(&d9__paused, &seen, (seen & ~BITS) | keep, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
}
