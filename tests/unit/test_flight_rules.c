/* DIAL9_TRIGGERS parsing (core/flight_rules.h): every good rule is kept, each bad one is named
 * in the error with why, and the thresholds are what was written. */
#include <string.h>

#include "check.h"
#include "core/flight_rules.h"

int main(void) {
    d9_flight_rules r;
    char err[512];
    CHECK_EQ_U64(d9_flight_rules_parse("poll_ms>20,sched_delay_ms>10,drops,event:CacheMissEvent", &r, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_EQ_U64(r.count, 4);
    CHECK_EQ_U64(r.rule[0].kind, D9_RULE_POLL_MS);
    CHECK_EQ_U64(r.rule[0].threshold_ns, 20000000);
    CHECK_EQ_U64(r.rule[1].kind, D9_RULE_SCHED_DELAY_MS);
    CHECK_EQ_U64(r.rule[1].threshold_ns, 10000000);
    CHECK_EQ_U64(r.rule[2].kind, D9_RULE_DROPS);
    CHECK_EQ_U64(r.rule[3].kind, D9_RULE_EVENT);
    CHECK_STR(d9_flight_rule_event_name(&r.rule[3]), "CacheMissEvent");
    CHECK_STR(r.rule[0].text, "poll_ms>20");

    /* a copy keeps the event's name (the recorder copies its configuration) */
    d9_flight_rules copy = r;
    memset(&r, 0, sizeof r);
    CHECK_STR(d9_flight_rule_event_name(&copy.rule[3]), "CacheMissEvent");

    /* bad ones named, good ones kept; spaces and empty items are fine */
    CHECK_EQ_U64(d9_flight_rules_parse(" poll_ms>5 , polls_ms>3,,sched_delay_ms>x,event:,drops", &r, err, sizeof err), 3);
    CHECK_EQ_U64(r.count, 2);
    CHECK_STR(r.rule[0].text, "poll_ms>5");
    CHECK_EQ_U64(r.rule[1].kind, D9_RULE_DROPS);
    CHECK(strstr(err, "bad rule 'polls_ms>3': unknown rule") != NULL);
    CHECK(strstr(err, "bad rule 'sched_delay_ms>x'") != NULL);
    CHECK(strstr(err, "bad rule 'event:'") != NULL);
    printf("error: %s\n", err);

    CHECK_EQ_U64(d9_flight_rules_parse("poll_ms<5", &r, err, sizeof err), 1);
    CHECK_EQ_U64(r.count, 0);
    CHECK_EQ_U64(d9_flight_rules_parse("poll_ms>99999999999", &r, err, sizeof err), 1);
    CHECK_EQ_U64(d9_flight_rules_parse("dropsy", &r, err, sizeof err), 1);
    CHECK_EQ_U64(d9_flight_rules_parse(NULL, &r, err, sizeof err), 0);
    CHECK_EQ_U64(r.count, 0);
    return d9t_summary("test_flight_rules");
}
