/* The arithmetic of the thread's CPU time from a task-clock page (core/thread_cpu_clock.h), on
 * made-up pages: no kernel here.
 *   - lock unchanged since the last value: the value advances by exactly the wall time (ticks
 *     times ns per tick), and nothing else is read;
 *   - lock changed at an unpark: base + the page's task clock (as of the sched-in);
 *   - lock changed at a park whose wall time since the last value, less the CPU time the page
 *     accounts since, is PARK_SLACK_NS or more, or for a long poll's CPU time (D9_TCC_EXACT):
 *     the exact read (the system call), base + its count;
 *   - lock changed at a park with less unaccounted: base + the page's task clock, a lower bound (never below
 *     the last value, the base unmoved), and no line: a park with the page still that one
 *     estimates from it, an unpark with the page still that one reads exactly, an unpark
 *     after a sched-in takes the page;
 *   - the exact read failing: "read by system call" (D9_TCC_NONE), the state untouched;
 *   - ns per tick not known yet: the exact read;
 *   - values never go down: a page or exact value below the last estimate is held at it, and
 *     the base takes the difference (later deltas exact);
 *   - the seqcount: a read with an update between its two loads of `lock` is retried and gives
 *     the new values; a page stuck mid-update (odd lock) gives up after its tries. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/thread_cpu_clock.h"

#define PARK_SLACK_NS 50000 /* d9_tcc_park_slack_ns: DIAL9_POLL_CPU_MIN_US's default / 20 */

static int exact_calls;
static uint64_t exact_value;

static uint64_t fake_exact(d9_tcc_state *s) {
    (void)s;
    exact_calls++;
    return exact_value;
}

static d9_tcc_state state_at(uint32_t lock, uint64_t cpu_ns, uint64_t ticks, uint64_t base_ns) {
    d9_tcc_state s;
    memset(&s, 0, sizeof s);
    s.lock = lock;
    s.cpu_ns = cpu_ns;
    s.ticks = ticks;
    s.base_ns = base_ns;
    return s;
}

static void unchanged_lock_adds_the_wall_time(void) {
    for (int unpark = 0; unpark < 2; unpark++) {
        d9_tcc_state s = state_at(10, 5000000, 1000, 700);
        exact_calls = 0;
        /* a page value that would be wrong if taken: only the lock may be looked at */
        d9_tcc_use use = unpark ? D9_TCC_UNPARK : D9_TCC_PARK;
        uint64_t v = d9_tcc_step(&s, use, 10, 1, 1000 + 250000, 1.0, PARK_SLACK_NS, fake_exact);
        CHECK_EQ_U64(v, 5000000 + 250000);
        CHECK_EQ_U64(exact_calls, 0);
        CHECK_EQ_U64(s.cpu_ns, v);
        CHECK_EQ_U64(s.ticks, 1000 + 250000);
        CHECK_EQ_U64(s.lock, 10);
        /* TSC ticks: 2.5 ticks a ns -> 0.4 ns a tick */
        v = d9_tcc_step(&s, use, 10, 1, 1000 + 250000 + 1000000, 0.4, PARK_SLACK_NS, fake_exact);
        CHECK_EQ_U64(v, 5000000 + 250000 + 400000);
        CHECK_EQ_U64(exact_calls, 0);
    }
}

static void changed_lock_at_an_unpark_takes_the_page(void) {
    d9_tcc_state s = state_at(10, 5000000, 1000, 700);
    exact_calls = 0;
    uint64_t v = d9_tcc_step(&s, D9_TCC_UNPARK, 12, 6000000, 90000000, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(v, 700 + 6000000);
    CHECK_EQ_U64(exact_calls, 0);
    CHECK_EQ_U64(s.lock, 12);
    CHECK_EQ_U64(s.ticks, 90000000);
    /* the next park, no switch since: that value plus the wall time since the unpark */
    v = d9_tcc_step(&s, D9_TCC_PARK, 12, 6000000, 90000000 + 30000, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(v, 700 + 6000000 + 30000);
    CHECK_EQ_U64(exact_calls, 0);
}

/* With PARK_SLACK_NS or more unaccounted, and for a long poll's CPU time whatever is. */
static void changed_lock_at_a_park_reads_exactly(void) {
    d9_tcc_state s = state_at(10, 5000000, 1000, 700);
    exact_calls = 0;
    exact_value = 5200000;
    uint64_t v = d9_tcc_step(&s, D9_TCC_PARK, 14, 5100000, 1000 + 900000, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(exact_calls, 1);
    CHECK_EQ_U64(v, 700 + 5200000); /* not the estimate 5000000 + 900000: the thread was off CPU */
    CHECK_EQ_U64(s.lock, 14);
    /* the exact read failing: the caller reads by system call, the state as it was */
    d9_tcc_state before = s;
    exact_value = D9_TCC_NONE;
    v = d9_tcc_step(&s, D9_TCC_EXACT, 16, 5300000, 1000 + PARK_SLACK_NS + 10, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(v, D9_TCC_NONE);
    CHECK_EQ_U64(exact_calls, 2);
    CHECK(memcmp(&s, &before, sizeof s) == 0);
    /* a long poll's value 10 ns after the last: read all the same */
    exact_value = 5300500;
    v = d9_tcc_step(&s, D9_TCC_EXACT, 16, 5300000, 1000 + PARK_SLACK_NS + 10, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(exact_calls, 3);
    CHECK_EQ_U64(v, 700 + 5300500);
    CHECK_EQ_U64(s.lock, 16);
}

/* A park after a switch with less than PARK_SLACK_NS unaccounted (its wall time since the last
 * value, less the page's CPU time since): the page's task clock (as of the sched-in), no read,
 * and no line; then the unpark's two cases. */
static void changed_lock_at_a_park_soon_takes_the_page_as_a_lower_bound(void) {
    for (int slept = 0; slept < 2; slept++) {
        d9_tcc_state s = state_at(10, 5000000, 1000, 700);
        s.poll_lock = 10; /* a poll under way on this line: kept */
        exact_calls = 0;
        /* the page accounts 100 700 ns since the last value: 100 700 + PARK_SLACK_NS of wall is
         * the first to read */
        d9_tcc_state t = s;
        d9_tcc_step(&t, D9_TCC_PARK, 14, 5100000, 1000 + 100700 + PARK_SLACK_NS, 1.0, PARK_SLACK_NS, fake_exact);
        CHECK_EQ_U64(exact_calls, 1);
        exact_calls = 0;
        uint64_t v = d9_tcc_step(&s, D9_TCC_PARK, 14, 5100000, 1000 + 100700 + PARK_SLACK_NS - 1, 1.0,
                                 PARK_SLACK_NS, fake_exact);
        CHECK_EQ_U64(exact_calls, 0);
        CHECK_EQ_U64(v, 700 + 5100000); /* not the estimate 5000000 + 150699: a lower bound */
        CHECK_EQ_U64(s.base_ns, 700);
        CHECK_EQ_U64(s.lock, D9_TCC_UNSEEN(14)); /* no line */
        CHECK(s.lock % 2 == 1);
        CHECK_EQ_U64(s.poll_line_lock, 10);
        CHECK_EQ_U64(s.poll_line_cpu, 5000000);
        CHECK_EQ_U64(s.poll_line_ticks, 1000);
        /* the fast path's test (lock unchanged) never passes on it */
        CHECK(s.lock != 14);
        /* a second park, the page unmoved: that value + the wall time, still no line */
        v = d9_tcc_step(&s, D9_TCC_PARK, 14, 5100000, 1000 + 100700 + PARK_SLACK_NS + 99, 1.0, PARK_SLACK_NS,
                        fake_exact);
        CHECK_EQ_U64(exact_calls, 0);
        CHECK_EQ_U64(v, 700 + 5100000 + 100);
        CHECK_EQ_U64(s.lock, D9_TCC_UNSEEN(14));
        exact_value = 5100500;
        if (slept) { /* the poller slept: a sched-in rewrote the page, its value */
            v = d9_tcc_step(&s, D9_TCC_UNPARK, 16, 5100300, 1000 + 5000000, 1.0, PARK_SLACK_NS, fake_exact);
            CHECK_EQ_U64(exact_calls, 0);
            CHECK_EQ_U64(v, 700 + 5100300);
            CHECK_EQ_U64(s.lock, 16);
        } else { /* it did not: the page is the one the park saw, stale; the read */
            v = d9_tcc_step(&s, D9_TCC_UNPARK, 14, 5100000, 1000 + 5000000, 1.0, PARK_SLACK_NS, fake_exact);
            CHECK_EQ_U64(exact_calls, 1);
            CHECK_EQ_U64(v, 700 + 5100500);
            CHECK_EQ_U64(s.lock, 14);
        }
        CHECK_EQ_U64(s.base_ns, 700); /* the lower bound was below both: nothing to hold */
        /* the poll's line stays the one kept at the park */
        CHECK_EQ_U64(s.poll_line_lock, 10);
        CHECK_EQ_U64(s.poll_line_cpu, 5000000);
    }
    /* a page value below the last value given (an estimate ran ahead): held there, the base
     * unmoved */
    d9_tcc_state s = state_at(10, 5000000, 1000, 700);
    uint64_t v = d9_tcc_step(&s, D9_TCC_PARK, 12, 4999000, 2000, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(v, 5000000);
    CHECK_EQ_U64(s.base_ns, 700);
    /* a long poll's value right after: read (no line to estimate from) */
    exact_calls = 0;
    exact_value = 5300000;
    v = d9_tcc_step(&s, D9_TCC_EXACT, 12, 4999000, 2500, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(exact_calls, 1);
    CHECK_EQ_U64(v, 700 + 5300000);
    CHECK_EQ_U64(s.lock, 12);
}

static void no_tick_rate_yet_reads_exactly(void) {
    d9_tcc_state s = state_at(10, 5000000, 1000, 700);
    exact_calls = 0;
    exact_value = 5000400;
    uint64_t v = d9_tcc_step(&s, D9_TCC_PARK, 10, 1, 1000 + 2000, 0.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(exact_calls, 1);
    CHECK_EQ_U64(v, 700 + 5000400);
}

/* An estimate that ran ahead (a vCPU stall counted as wall time): the next exact value is held
 * at it, and the base takes the difference so that the deltas after it are exact. */
static void never_back(void) {
    d9_tcc_state s = state_at(10, 5000000, 1000, 700);
    exact_calls = 0;
    /* a sched-in whose task clock is 300 ns below the last estimate */
    uint64_t v = d9_tcc_step(&s, D9_TCC_UNPARK, 12, 5000000 - 700 - 300, 5000, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(v, 5000000);
    CHECK_EQ_U64(s.base_ns, 700 + 300);
    /* the exact count 2 000 ns on: the value 2 000 ns on */
    exact_value = 5000000 - 700 - 300 + 2000;
    v = d9_tcc_step(&s, D9_TCC_EXACT, 14, 1, 6000, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(v, 5000000 + 2000);
    CHECK_EQ_U64(exact_calls, 1);
    /* an exact count below it too: held, the base moved again */
    exact_value = 4000000;
    v = d9_tcc_step(&s, D9_TCC_EXACT, 16, 1, 7000, 1.0, PARK_SLACK_NS, fake_exact);
    CHECK_EQ_U64(v, 5000000 + 2000);
    CHECK_EQ_U64(s.base_ns, 5000000 + 2000 - 4000000);
}

/* The kernel's update, made between the snapshot's two loads of `lock`. */
typedef struct updater {
    struct perf_event_mmap_page *page;
    int calls, updates;
} updater;

static void update_once(void *ctx) {
    updater *u = ctx;
    u->calls++;
    if (u->updates) return;
    u->updates++;
    u->page->lock += 2;
    u->page->offset = 777777;
}

static void seqcount_retries_a_torn_read(void) {
    static struct perf_event_mmap_page page;
    memset(&page, 0, sizeof page);
    page.lock = 20;
    page.offset = 111111;
    updater u = {&page, 0, 0};
    uint32_t lock = 0;
    uint64_t clock = 0;
    CHECK(d9_tcc_snapshot(&page, &lock, &clock, update_once, &u));
    CHECK_EQ_U64(u.calls, 2); /* the first try was torn */
    CHECK_EQ_U64(lock, 22);
    CHECK_EQ_U64(clock, 777777);
    /* mid-update (odd lock): never taken */
    page.lock = 23;
    u.calls = 0;
    CHECK(!d9_tcc_snapshot(&page, &lock, &clock, update_once, &u));
    CHECK_EQ_U64(u.calls, 8);
    /* a quiet page: one try */
    page.lock = 24;
    page.offset = 5;
    u.calls = 0;
    CHECK(d9_tcc_snapshot(&page, &lock, &clock, update_once, &u));
    CHECK_EQ_U64(u.calls, 1);
    CHECK_EQ_U64(lock, 24);
    CHECK_EQ_U64(clock, 5);
}

static void source_names(void) {
    d9_thread_cpu_source s = D9_THREAD_CPU_SYSCALL;
    CHECK(d9_thread_cpu_source_parse("auto", &s) && s == D9_THREAD_CPU_AUTO);
    CHECK(d9_thread_cpu_source_parse("PERF", &s) && s == D9_THREAD_CPU_PERF);
    CHECK(d9_thread_cpu_source_parse("Page", &s) && s == D9_THREAD_CPU_PAGE);
    CHECK(d9_thread_cpu_source_parse("Lazy", &s) && s == D9_THREAD_CPU_LAZY);
    CHECK(d9_thread_cpu_source_parse("syscall", &s) && s == D9_THREAD_CPU_SYSCALL);
    CHECK(!d9_thread_cpu_source_parse("", &s));
    CHECK(!d9_thread_cpu_source_parse("rdtsc", &s));
    CHECK(s == D9_THREAD_CPU_SYSCALL);
}

int main(void) {
    unchanged_lock_adds_the_wall_time();
    changed_lock_at_an_unpark_takes_the_page();
    changed_lock_at_a_park_reads_exactly();
    changed_lock_at_a_park_soon_takes_the_page_as_a_lower_bound();
    no_tick_rate_yet_reads_exactly();
    never_back();
    seqcount_retries_a_torn_read();
    source_names();
    return d9t_summary("test_thread_cpu_clock_step");
}
