/* Arming the collector's rule checks (flight_rule_check.h). */
#include "core/flight_rule_check.h"

#include <string.h>

#include "core/flight_rule_wake.h"

d9_rule_check d9_g_rule_check = {.poll_ns = UINT64_MAX, .sched_ns = UINT64_MAX};

void d9_rule_check_arm(const d9_flight_rules *rules) {
    d9_rule_check *rc = &d9_g_rule_check;
    atomic_store_explicit(&rc->on, false, memory_order_release);
    rc->poll_ns = rc->sched_ns = UINT64_MAX;
    rc->drops = rc->events = false;
    rc->rules = *rules;
    memset(rc->event_match, 0, sizeof rc->event_match);
    for (size_t i = 0; i < rules->count; i++) {
        const d9_flight_rule *r = &rules->rule[i];
        switch (r->kind) {
        case D9_RULE_POLL_MS: if (r->threshold_ns < rc->poll_ns) rc->poll_ns = r->threshold_ns; break;
        case D9_RULE_SCHED_DELAY_MS: if (r->threshold_ns < rc->sched_ns) rc->sched_ns = r->threshold_ns; break;
        case D9_RULE_DROPS: rc->drops = true; break;
        case D9_RULE_EVENT: rc->events = true; break;
        }
    }
    if (rules->count) atomic_store_explicit(&rc->on, true, memory_order_release);
    d9_rule_wake_arm(rc->poll_ns); /* poll ends past the threshold ask for a drain at once */
    d9_rule_wake_arm_sched(rc->sched_ns); /* and unparks after a delay past it */
}

void d9_rule_check_disarm(void) {
    d9_rule_wake_disarm();
    atomic_store_explicit(&d9_g_rule_check.on, false, memory_order_release);
}

/* Once per custom type: does an event:Name rule name it? */
bool d9_rule_check_event_slow(const d9_event_type *type) {
    d9_rule_check *rc = &d9_g_rule_check;
    bool match = false;
    for (size_t i = 0; i < rc->rules.count && !match; i++)
        match = rc->rules.rule[i].kind == D9_RULE_EVENT && type->def.name &&
                strcmp(d9_flight_rule_event_name(&rc->rules.rule[i]), type->def.name) == 0;
    if (type->index < D9_MAX_EVENT_TYPES) rc->event_match[type->index] = match ? 2 : 1;
    return match;
}
