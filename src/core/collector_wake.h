/* The collector's sleep and what ends it early (docs/flight-recorder.md): a futex word that any
 * thread may bump, with no lock, so that an application thread can ask for a drain (a poll
 * longer than a rule's threshold, flight_rule_wake.h) without a mutex or a write(2). The
 * recorder's own requests (stop, flush) use it too: one way to wake the collector. */
#ifndef D9_CORE_COLLECTOR_WAKE_H
#define D9_CORE_COLLECTOR_WAKE_H

#include <stdint.h>

/* The word's value now: read it before checking whether there is work, then sleep on it. */
uint32_t d9_collector_wake_seen(void);
/* Sleep until the word differs from `seen`, a wake, or `ms` (CLOCK_MONOTONIC) pass. */
void d9_collector_sleep(uint32_t seen, uint32_t ms);
/* End the collector's sleep now (or its next one, when it is not asleep): any thread,
 * async-signal-safe, no lock; a system call (FUTEX_WAKE). */
void d9_collector_wake(void);

#endif
