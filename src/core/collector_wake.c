/* The collector's sleep on a futex word (collector_wake.h). */
#include "core/collector_wake.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint32_t g_word;

uint32_t d9_collector_wake_seen(void) { return atomic_load_explicit(&g_word, memory_order_acquire); }

void d9_collector_sleep(uint32_t seen, uint32_t ms) {
    /* a relative timeout: FUTEX_WAIT measures it on CLOCK_MONOTONIC, so a wall-clock jump
     * neither spins nor oversleeps it; an early return (a signal) is one early drain */
    struct timespec rel = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, &g_word, FUTEX_WAIT_PRIVATE, seen, &rel, NULL, 0);
}

void d9_collector_wake(void) {
    atomic_fetch_add_explicit(&g_word, 1, memory_order_release);
    syscall(SYS_futex, &g_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
