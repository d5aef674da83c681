/* The poll-end wake-up of a poll_ms rule (docs/flight-recorder.md, "Where the latency goes"):
 * the collector checks the rules as it merges, which was a drain period (DIAL9_FLUSH_MS) after
 * the event. While a poll_ms rule is armed, the poll hooks keep the poll's begin tick per
 * thread, and a poll end longer than the lowest threshold wakes the collector to drain now
 * (collector_wake.h: a futex, no lock, nothing written), at most once per ms for all threads.
 * The poll's begin is the one the hooks keep for every poll anyway (poll_cpu.h's poll_ticks),
 * so a begin pays nothing here, and an end with no such rule armed one load and one
 * predictable branch. The rule's
 * match itself stays the collector's: this only says when to drain. */
#ifndef D9_CORE_FLIGHT_RULE_WAKE_H
#define D9_CORE_FLIGHT_RULE_WAKE_H

#include <stdbool.h>
#include <stdint.h>

/* a poll_ms rule is armed. Hidden: the hook loads it in one
 * instruction, not through an address computed first */
extern bool d9_rule_wake_on __attribute__((visibility("hidden")));

/* The armed paths, out of line (a tail call from the hook: its fast path saves no register). */
void d9_rule_wake_poll_end_slow(uint64_t ticks) __attribute__((cold, noinline));
void d9_rule_wake_poll_end_begin_slow(uint64_t ticks) __attribute__((cold, noinline));

/* In the poll end hooks, after the record is committed (the drain it asks for must see it)
 * and before poll_cpu.h's part (a fused end + begin moves the begin on). */
static inline void d9_rule_wake_poll_end(uint64_t ticks) {
    if (__builtin_expect(__atomic_load_n(&d9_rule_wake_on, __ATOMIC_RELAXED), 0)) d9_rule_wake_poll_end_slow(ticks);
}
static inline void d9_rule_wake_poll_end_begin(uint64_t ticks) {
    if (__builtin_expect(__atomic_load_n(&d9_rule_wake_on, __ATOMIC_RELAXED), 0)) d9_rule_wake_poll_end_begin_slow(ticks);
}

/* Arm with the lowest poll_ms threshold (UINT64_MAX: none, nothing armed) / disarm (both). */
void d9_rule_wake_arm(uint64_t poll_ns);
void d9_rule_wake_disarm(void);

/* The unpark's wake-up of a sched_delay_ms rule. The delay is schedstat's run-queue wait
 * between the thread's last reading and the unpark's; the reading is made by the park or
 * unpark hook itself (core/hooks.c's park_record, a system call, only when due:
 * DIAL9_SCHEDSTAT_RESOLUTION_US), so the thread knows the delay as soon as the collector would,
 * minus the drain: it keeps its last reading (a thread-local pair) and an unpark whose delay
 * is over the lowest threshold wakes the collector as a long poll's end does (the same futex,
 * the same 1 ms limit for all threads and rules, no lock, nothing written). Called after the
 * record is committed, with the value the record holds (D9_NS_NOT_READ: no reading). */
extern bool d9_rule_wake_sched_on __attribute__((visibility("hidden")));
void d9_rule_wake_schedstat_slow(bool unpark, uint64_t wait, uint64_t ticks) __attribute__((cold, noinline));
static inline void d9_rule_wake_schedstat(bool unpark, uint64_t wait, uint64_t ticks) {
    if (__builtin_expect(__atomic_load_n(&d9_rule_wake_sched_on, __ATOMIC_RELAXED), 0))
        d9_rule_wake_schedstat_slow(unpark, wait, ticks);
}
/* Arm with the lowest sched_delay_ms threshold in ns (UINT64_MAX: none). */
void d9_rule_wake_arm_sched(uint64_t sched_ns);

/* The collector, after its sleep: true when a poll end asked for this drain (and takes the
 * request). Collector thread only. */
bool d9_rule_wake_take(void);
/* The collector, while it drains: whether the drain under way was asked for by a poll end
 * (the manifest's trigger.drain). */
extern bool d9_rule_wake_in_drain;

/* Wake-ups sent since the process started (tests, docs). */
uint64_t d9_rule_wake_count(void);

#endif
