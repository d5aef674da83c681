/* The flight recorder's trigger rules (DIAL9_TRIGGERS, docs/flight-recorder.md): parsed once,
 * then evaluated on the background flight thread over each sealed segment as the decoder reads
 * it, never on the application's threads. */
#ifndef D9_CORE_FLIGHT_RULES_H
#define D9_CORE_FLIGHT_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/u64_map.h"

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
typedef void (*d9_flight_hit_fn)(const d9_flight_hit *hit, void *ctx);

/* State kept across segments (a poll that starts in one and ends in the next). */
typedef struct d9_flight_eval {
    d9_u64_map poll_start; /* worker id -> the open poll's start */
} d9_flight_eval;
void d9_flight_eval_init(d9_flight_eval *ev);
void d9_flight_eval_free(d9_flight_eval *ev);

/* Read one uncompressed segment and call `fn` for each event a rule matches. Returns the
 * events read, or -1 with a message in err when the bytes do not decode to their end. */
int64_t d9_flight_rules_scan(d9_flight_eval *ev, const d9_flight_rules *rules, const uint8_t *data, size_t len,
                             d9_flight_hit_fn fn, void *ctx, char *err, size_t errlen);

#endif
