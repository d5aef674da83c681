/* The flight recorder's trigger rules (DIAL9_TRIGGERS, docs/flight-recorder.md): parsed once,
 * then checked by the collector as it merges the events (flight_rule_check.h), never on the
 * application's threads. */
#ifndef D9_CORE_FLIGHT_RULES_H
#define D9_CORE_FLIGHT_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#define D9_FLIGHT_MAX_RULES 16

typedef enum d9_flight_rule_kind {
    D9_RULE_POLL_MS,        /* poll_ms>N: a poll longer than N ms */
    D9_RULE_SCHED_DELAY_MS, /* sched_delay_ms>N: an unpark's scheduling delay over N ms */
    D9_RULE_DROPS,          /* drops: any DroppedEventsEvent */
    D9_RULE_EVENT,          /* event:Name: any event of the schema called Name */
} d9_flight_rule_kind;

typedef struct d9_flight_rule {
    d9_flight_rule_kind kind;
    uint64_t threshold_ns;
    char text[96]; /* the rule as written, for the manifest ("poll_ms>20") */
} d9_flight_rule;

/* event:Name: the Name (text past "event:"; the struct may be copied, so no pointer is kept) */
static inline const char *d9_flight_rule_event_name(const d9_flight_rule *r) { return r->text + 6; }

typedef struct d9_flight_rules {
    d9_flight_rule rule[D9_FLIGHT_MAX_RULES];
    size_t count;
} d9_flight_rules;

/* Parse "poll_ms>20,sched_delay_ms>10,drops,event:Name". Every good rule is kept; each bad
 * one is named in err ("bad rule 'x': why", joined by "; "). Returns the number of bad ones. */
size_t d9_flight_rules_parse(const char *spec, d9_flight_rules *out, char *err, size_t errlen);

/* What fired: the rule, the event's interval (a poll's start and end; one instant otherwise,
 * CLOCK_MONOTONIC ns as in the trace) and a short description. */
typedef struct d9_flight_hit {
    const d9_flight_rule *rule;
    uint64_t begin_ns, end_ns;
    char what[128];
} d9_flight_hit;

#endif
