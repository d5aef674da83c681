/* The switch ring's reading (core/thread_cpu_switch_ring.h) on made-up pages and rings: no
 * kernel here.
 *   - a page whose ring ends with this thread's switch out then in, and whose key holds: the
 *     lock, c_in (the page's offset), t_in and t_out;
 *   - what the ring cannot say is refused, so that the caller reads: no switch yet (fewer than
 *     two records), the last record a switch out, the one before it not one, a record of another
 *     size, the times out of order, the key broken (a page update without a record: lock moved
 *     by 2 more than the records), an update under way for every try;
 *   - the ring wraps: records read modulo its size, across its end too;
 *   - the line: after the switch in, c_in plus the time since it at the hook's time; a hook time
 *     before the switch in, c_in at the switch in. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/thread_cpu_switch_ring.h"

#define RING 256 /* bytes: 16 records */

static struct perf_event_mmap_page page;
static char ring[RING];

/* A record at byte `at` (mod RING). */
static void put(uint64_t at, uint16_t misc, uint16_t size, uint64_t time_ns) {
    struct perf_event_header h = {.type = PERF_RECORD_SWITCH, .misc = misc, .size = size};
    memcpy(ring + (at % RING), &h, sizeof h);
    memcpy(ring + ((at + 8) % RING), &time_ns, sizeof time_ns);
}

/* The page after `pairs` switch out/in pairs since a lock of `lock0` (the key), the last pair's
 * out at t_out and in at t_in, c_in its task clock. */
static void switched(uint32_t lock0, uint64_t pairs, uint64_t t_out, uint64_t t_in, uint64_t c_in) {
    memset(ring, 0, sizeof ring);
    uint64_t head = pairs * 2 * D9_TCC_SWITCH_RECORD_BYTES;
    if (pairs) {
        put(head - 32, PERF_RECORD_MISC_SWITCH_OUT, 16, t_out);
        put(head - 16, 0, 16, t_in);
    }
    page.data_head = head;
    page.lock = lock0 + 2 * (uint32_t)pairs;
    page.offset = (int64_t)c_in;
}

static bool snap(uint32_t key, d9_tcc_switch_in *sw) { return d9_tcc_ring_snapshot(&page, ring, RING, key, sw); }

static void reads_the_last_switch_in(void) {
    d9_tcc_switch_in sw;
    switched(4, 3, 1000, 5000, 777);
    CHECK(snap(4, &sw));
    CHECK_EQ_U64(sw.lock, 10);
    CHECK_EQ_U64(sw.c_in, 777);
    CHECK_EQ_U64(sw.t_in, 5000);
    CHECK_EQ_U64(sw.t_out, 1000);
    /* a preempted switch out says so in its misc: still this thread's */
    put(page.data_head - 32, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, 16, 1000);
    CHECK(snap(4, &sw));
    /* wrapped: 9 pairs of 32 bytes in a 256-byte ring, the last in at 272 % 256 */
    switched(4, 9, 2000, 9000, 55);
    CHECK(snap(4, &sw));
    CHECK_EQ_U64(sw.t_in, 9000);
    CHECK_EQ_U64(sw.lock, 22);
    /* across the end: a record whose time lies in the ring's first bytes */
    memset(ring, 0, sizeof ring);
    page.data_head = RING + 8; /* key 4: lock 4 + (RING + 8) / 16, records at RING - 24 and RING - 8 */
    page.lock = 4 + (uint32_t)(page.data_head / 16);
    put(RING - 24, PERF_RECORD_MISC_SWITCH_OUT, 16, 3000);
    put(RING - 8, 0, 16, 3500);
    CHECK(snap(4, &sw));
    CHECK_EQ_U64(sw.t_out, 3000);
    CHECK_EQ_U64(sw.t_in, 3500);
}

static void refuses_what_it_cannot_say(void) {
    d9_tcc_switch_in sw;
    switched(4, 0, 0, 0, 10); /* no switch yet */
    CHECK(!snap(4, &sw));
    switched(4, 3, 1000, 5000, 777);
    CHECK(!snap(6, &sw)); /* the key broken: the page moved once more than the records say */
    page.lock += 2;
    CHECK(!snap(4, &sw));
    switched(4, 3, 1000, 5000, 777);
    put(page.data_head - 16, PERF_RECORD_MISC_SWITCH_OUT, 16, 5000); /* the last a switch out */
    CHECK(!snap(4, &sw));
    switched(4, 3, 1000, 5000, 777);
    put(page.data_head - 32, 0, 16, 1000); /* the one before it a switch in */
    CHECK(!snap(4, &sw));
    switched(4, 3, 1000, 5000, 777);
    put(page.data_head - 16, 0, 24, 5000); /* another record size */
    CHECK(!snap(4, &sw));
    switched(4, 3, 6000, 5000, 777); /* out after in */
    CHECK(!snap(4, &sw));
    switched(4, 3, 1000, 5000, 777);
    struct perf_event_header lost = {.type = PERF_RECORD_LOST, .size = 16};
    memcpy(ring + (page.data_head - 16) % RING, &lost, sizeof lost);
    CHECK(!snap(4, &sw));
    switched(4, 3, 1000, 5000, 777);
    page.lock = 11; /* an update under way at every try */
    CHECK(!snap(4, &sw));
}

static void the_line(void) {
    d9_tcc_switch_in sw = {.lock = 10, .c_in = 1000000, .t_in = 50000, .t_out = 20000};
    uint64_t clock, at;
    d9_tcc_ring_line(&sw, 80000, &clock, &at); /* 30 us after the switch in */
    CHECK_EQ_U64(clock, 1030000);
    CHECK_EQ_U64(at, 80000);
    d9_tcc_ring_line(&sw, 50000, &clock, &at);
    CHECK_EQ_U64(clock, 1000000);
    CHECK_EQ_U64(at, 50000);
    d9_tcc_ring_line(&sw, 30000, &clock, &at); /* the hook's time before the switch in: the line from it */
    CHECK_EQ_U64(clock, 1000000);
    CHECK_EQ_U64(at, 50000);
}

int main(void) {
    reads_the_last_switch_in();
    refuses_what_it_cannot_say();
    the_line();
    return d9t_summary("test_thread_cpu_switch_ring");
}
