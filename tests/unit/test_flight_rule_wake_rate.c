/* The poll end's wake-up, its decisions alone (core/flight_rule_wake.h), on ticks this test
 * makes up (CLOCK_MONOTONIC ticks: 1 per ns, so the thresholds are exact): no wake while no
 * poll_ms rule is armed, none for a poll under the threshold, one for a poll over it, and a
 * storm of long polls ending within 1 ms of a wake costs no other wake (one per ms for all
 * threads); the next ms gets its own. Then a sched_delay_ms rule's unpark: a wake exactly when
 * the delay since the thread's last schedstat reading is over the threshold. No thread and no clock is involved: the counts are
 * decided by the ticks given. */
#include <stdint.h>

#include "check.h"
#include "core/clock.h"
#include "core/flight_rule_wake.h"
#include "core/records.h"
#include "core/thread_cpu_clock.h"

#define MS 1000000ull

static uint64_t wakes_since(uint64_t before) { return d9_rule_wake_count() - before; }

/* the begin as the hooks keep it for every poll (poll_cpu.h) */
static void poll_begin(uint64_t begin) { d9__tls_cpu_clock.poll_ticks = begin; }

static void poll(uint64_t begin, uint64_t end) {
    poll_begin(begin);
    d9_rule_wake_poll_end(end);
}

int main(void) {
    d9_clock_select(D9_CLOCK_MONOTONIC); /* ticks are ns */
    uint64_t w = d9_rule_wake_count();

    poll(1000 * MS, 1500 * MS); /* 500 ms, but no rule armed */
    CHECK_EQ_U64(wakes_since(w), 0);
    CHECK(!d9_rule_wake_take());

    d9_rule_wake_arm(UINT64_MAX); /* rules, but none on polls: nothing armed */
    poll(2000 * MS, 2500 * MS);
    CHECK_EQ_U64(wakes_since(w), 0);

    d9_rule_wake_arm(10 * MS); /* poll_ms>10 */
    poll(3000 * MS, 3005 * MS); /* 5 ms */
    CHECK_EQ_U64(wakes_since(w), 0);
    CHECK(!d9_rule_wake_take());

    poll(4000 * MS, 4020 * MS); /* 20 ms: a wake, the collector's to take once */
    CHECK_EQ_U64(wakes_since(w), 1);
    CHECK(d9_rule_wake_take());
    CHECK(!d9_rule_wake_take());

    /* a storm: a thousand 15 ms polls ending within the ms after that wake */
    for (uint64_t i = 0; i < 1000; i++) poll(4020 * MS + i * 900 - 15 * MS, 4020 * MS + i * 900);
    CHECK_EQ_U64(wakes_since(w), 1);
    poll(4021 * MS - 15 * MS, 4021 * MS + 1); /* the next ms: its own wake */
    CHECK_EQ_U64(wakes_since(w), 2);
    CHECK(d9_rule_wake_take());

    /* an end before its begin's ticks (a begin on another clock's scale) is not measured */
    poll_begin(6500 * MS);
    d9_rule_wake_poll_end(6000 * MS);
    CHECK_EQ_U64(wakes_since(w), 2);

    /* a poll's end and the next one's begin in one call: the end measured, the begin kept */
    poll_begin(8000 * MS);
    d9_rule_wake_poll_end_begin(8030 * MS); /* 30 ms */
    CHECK_EQ_U64(wakes_since(w), 3);
    poll_begin(8030 * MS); /* poll_cpu.h's part of the fused hook */
    d9_rule_wake_poll_end(8032 * MS); /* 2 ms since the fused call's begin */
    CHECK_EQ_U64(wakes_since(w), 3);

    d9_rule_wake_disarm();
    poll(9000 * MS, 9500 * MS);
    CHECK_EQ_U64(wakes_since(w), 3);

    /* sched_delay_ms>10: an unpark's delay is its schedstat reading minus the thread's last
     * one (the park's, or an unpark's), as the collector computes it */
    CHECK(d9_rule_wake_take()); /* the fused end's, above */
    d9_rule_wake_schedstat(true, 1000 * MS, 10000 * MS); /* no rule armed: nothing kept */
    d9_rule_wake_arm_sched(10 * MS);
    d9_rule_wake_schedstat(true, 2000 * MS, 10010 * MS); /* the thread's first reading: no delay */
    CHECK_EQ_U64(wakes_since(w), 3);
    d9_rule_wake_schedstat(false, 2000 * MS, 10020 * MS); /* a park */
    d9_rule_wake_schedstat(true, 2005 * MS, 10030 * MS);  /* 5 ms runnable */
    CHECK_EQ_U64(wakes_since(w), 3);
    CHECK(!d9_rule_wake_take());
    d9_rule_wake_schedstat(false, D9_NS_NOT_READ, 10040 * MS); /* not read: the last reading stays */
    d9_rule_wake_schedstat(true, 2025 * MS, 10050 * MS);       /* 20 ms since it: a wake */
    CHECK_EQ_U64(wakes_since(w), 4);
    CHECK(d9_rule_wake_take());
    d9_rule_wake_schedstat(false, 2025 * MS, 10050 * MS + 10);
    d9_rule_wake_schedstat(true, 2100 * MS, 10050 * MS + 20); /* within the ms of the last wake */
    CHECK_EQ_U64(wakes_since(w), 4);
    d9_rule_wake_schedstat(true, D9_NS_UNKNOWN, 10060 * MS); /* unreadable: the next measures nothing */
    d9_rule_wake_schedstat(true, 3000 * MS, 10070 * MS);
    CHECK_EQ_U64(wakes_since(w), 4);
    d9_rule_wake_schedstat(false, 2000 * MS, 10080 * MS); /* gone backwards (another thread's?): nothing */
    d9_rule_wake_schedstat(true, 1000 * MS, 10090 * MS);
    CHECK_EQ_U64(wakes_since(w), 4);
    d9_rule_wake_schedstat(true, 1100 * MS, 10100 * MS); /* a poll_ms rule's absence does not matter */
    CHECK_EQ_U64(wakes_since(w), 5);
    d9_rule_wake_disarm();
    d9_rule_wake_schedstat(false, 1100 * MS, 10200 * MS);
    d9_rule_wake_schedstat(true, 1200 * MS, 10210 * MS);
    CHECK_EQ_U64(wakes_since(w), 5);
    return d9t_summary("test_flight_rule_wake_rate");
}
