/* The trigger rules as the collector checks them while it merges (docs/flight-recorder.md):
 * thresholds precomputed once, one compare per poll end, unpark, drop report or custom event,
 * and only when a rule is armed (one predictable branch per event otherwise). A match is posted
 * to the flight thread, which applies debounce and rate limit and dumps: the rule fires within
 * a drain of the event, not when its segment is sealed. Collector thread only, but arm/disarm. */
#ifndef D9_CORE_FLIGHT_RULE_CHECK_H
#define D9_CORE_FLIGHT_RULE_CHECK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/event_types.h"
#include "core/flight_rules.h"
#include "core/thread_buffer.h"

typedef struct d9_rule_check {
    _Atomic bool on;        /* set (release) after the fields below: read (acquire) per run */
    uint64_t poll_ns;       /* the lowest poll_ms threshold; UINT64_MAX: no such rule */
    uint64_t sched_ns;      /* the lowest sched_delay_ms threshold; UINT64_MAX: none */
    bool drops, events;
    d9_flight_rules rules;  /* for event:Name */
    uint8_t event_match[D9_MAX_EVENT_TYPES]; /* per custom type: 0 not looked up, 1 no, 2 yes */
} d9_rule_check;

extern d9_rule_check d9_g_rule_check;

static inline bool d9_rule_check_on(void) { return atomic_load_explicit(&d9_g_rule_check.on, memory_order_acquire); }

/* Start checking these rules (none: nothing is checked) / stop. */
void d9_rule_check_arm(const d9_flight_rules *rules);
void d9_rule_check_disarm(void);

/* A match, out of line (the flight recorder's; flight_recorder.c): posted with the event's
 * interval and value (a poll's or a delay's ns, a drop count) and the worker. */
void d9_flight_rule_matched(d9_flight_rule_kind kind, uint64_t begin_ns, uint64_t end_ns, uint64_t value,
                            uint64_t worker, const char *event_name) __attribute__((cold, noinline));

/* The checks, each called only when d9_rule_check_on(). */
static inline void d9_rule_check_poll_begin(d9_thread *t, uint64_t ts) { t->c_poll_start = ts; }
static inline void d9_rule_check_poll_end(d9_thread *t, uint64_t ts, uint64_t worker) {
    uint64_t start = t->c_poll_start;
    t->c_poll_start = 0; /* a poll end without its start (dropped) is never measured */
    if (__builtin_expect(ts - start > d9_g_rule_check.poll_ns, 0) && start && start <= ts)
        d9_flight_rule_matched(D9_RULE_POLL_MS, start, ts, ts - start, worker, NULL);
}
static inline void d9_rule_check_unpark(uint64_t ts, uint64_t delay, uint64_t worker) {
    if (__builtin_expect(delay > d9_g_rule_check.sched_ns, 0))
        d9_flight_rule_matched(D9_RULE_SCHED_DELAY_MS, ts >= delay ? ts - delay : 0, ts, delay, worker, NULL);
}
static inline void d9_rule_check_drops(uint64_t ts, uint64_t count) {
    if (d9_g_rule_check.drops && count) d9_flight_rule_matched(D9_RULE_DROPS, ts, ts, count, 255, NULL);
}
bool d9_rule_check_event_slow(const d9_event_type *type);
static inline void d9_rule_check_event(const d9_event_type *type, uint64_t ts) {
    if (!d9_g_rule_check.events) return;
    uint8_t m = d9_g_rule_check.event_match[type->index];
    if (m == 0) m = d9_rule_check_event_slow(type) ? 2 : 1;
    if (m == 2) d9_flight_rule_matched(D9_RULE_EVENT, ts, ts, 0, 255, type->def.name);
}

#endif
