/* The collector's reading of a thread's switch ring as the off-CPU source's records
 * (d9_tcc_ring_consume, core/thread_cpu_switch_ring.h) on made-up rings: no kernel here.
 *   - every record from the reader's position to the head, in order, with its misc (switch out,
 *     preempted) and time; the position moved to the head; a second pass gives only the new ones;
 *   - an overrun: the kernel went round the ring past the reader (it overwrites: the ring is
 *     mapped read-only), so the records it wrote over are counted lost, exactly, with the time
 *     of the first record after them, and only the records the kernel cannot be writing over
 *     (the guard kept clear of its head) are handed on;
 *   - a record that is not a 16-byte switch record ends the pass, the rest counted lost. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/thread_cpu_switch_ring.h"

#define RING 256 /* bytes: 16 records */
#define REC D9_TCC_SWITCH_RECORD_BYTES

static struct perf_event_mmap_page page;
static char ring[RING];
static uint64_t scratch[RING / REC][2];

/* Record number i (at byte i * 16): a switch out at even i (preempted when i % 4 == 0), in at
 * odd i, at time 1000 + i. */
static void write_records(uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; i++) {
        uint16_t misc = i % 2 ? 0 : PERF_RECORD_MISC_SWITCH_OUT | (i % 4 ? 0 : PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
        struct perf_event_header h = {.type = PERF_RECORD_SWITCH, .misc = misc, .size = REC};
        uint64_t t = 1000 + i;
        memcpy(ring + (i * REC) % RING, &h, sizeof h);
        memcpy(ring + (i * REC + 8) % RING, &t, sizeof t);
    }
    page.data_head = to * REC;
}

typedef struct seen {
    uint64_t n, first_time, last_time;
    uint16_t misc[64];
} seen;

static void on_record(void *ctx, uint64_t time_ns, uint16_t misc) {
    seen *s = ctx;
    if (s->n == 0) s->first_time = time_ns;
    s->last_time = time_ns;
    if (s->n < 64) s->misc[s->n] = misc;
    s->n++;
}

static d9_tcc_consumed consume(uint64_t *at, seen *s) {
    memset(s, 0, sizeof *s);
    return d9_tcc_ring_consume(&page, ring, RING, at, scratch, on_record, s);
}

static void reads_in_order(void) {
    uint64_t at = 0;
    seen s;
    write_records(0, 6);
    d9_tcc_consumed r = consume(&at, &s);
    CHECK_EQ_U64(r.records, 6);
    CHECK_EQ_U64(r.lost, 0);
    CHECK_EQ_U64(s.n, 6);
    CHECK_EQ_U64(s.first_time, 1000);
    CHECK_EQ_U64(s.last_time, 1005);
    CHECK_EQ_U64(s.misc[0], PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
    CHECK_EQ_U64(s.misc[1], 0);
    CHECK_EQ_U64(s.misc[2], PERF_RECORD_MISC_SWITCH_OUT);
    CHECK_EQ_U64(at, 6 * REC);
    /* the next pass: the new ones only, across the ring's end (records 6..19 of a 16-record ring) */
    write_records(6, 20);
    r = consume(&at, &s);
    CHECK_EQ_U64(r.records, 14);
    CHECK_EQ_U64(r.lost, 0);
    CHECK_EQ_U64(s.first_time, 1006);
    CHECK_EQ_U64(s.last_time, 1019);
    CHECK_EQ_U64(at, 20 * REC);
    /* nothing new: nothing */
    r = consume(&at, &s);
    CHECK_EQ_U64(r.records + r.lost + s.n, 0);
}

static void an_overrun_is_counted(void) {
    uint64_t at = 0;
    seen s;
    write_records(0, 2);
    consume(&at, &s);
    /* the kernel wrote 40 more records into a 16-record ring: the reader keeps the last 14 (16
     * less the guard), the 26 before them are lost, and the loss ends at the first kept one */
    write_records(2, 42);
    d9_tcc_consumed r = consume(&at, &s);
    CHECK_EQ_U64(r.records, 16 - D9_TCC_RING_GUARD_RECORDS);
    CHECK_EQ_U64(r.lost, 40 - (16 - D9_TCC_RING_GUARD_RECORDS));
    CHECK_EQ_U64(r.lost_until_ns, 1000 + 42 - (16 - D9_TCC_RING_GUARD_RECORDS));
    CHECK_EQ_U64(s.first_time, r.lost_until_ns);
    CHECK_EQ_U64(s.last_time, 1041);
    CHECK_EQ_U64(r.records + r.lost, 40); /* every record written: read or counted */
    CHECK_EQ_U64(at, 42 * REC);
    /* a ring that filled exactly to the guard loses nothing */
    write_records(42, 42 + 16 - D9_TCC_RING_GUARD_RECORDS);
    r = consume(&at, &s);
    CHECK_EQ_U64(r.lost, 0);
    CHECK_EQ_U64(r.records, 16 - D9_TCC_RING_GUARD_RECORDS);
}

static void a_foreign_record_ends_the_pass(void) {
    uint64_t at = 0;
    seen s;
    write_records(0, 8);
    struct perf_event_header h = {.type = PERF_RECORD_LOST, .misc = 0, .size = REC};
    memcpy(ring + 3 * REC, &h, sizeof h);
    d9_tcc_consumed r = consume(&at, &s);
    CHECK_EQ_U64(r.records, 3);
    CHECK_EQ_U64(r.lost, 5);
    CHECK_EQ_U64(at, 8 * REC);
}

int main(void) {
    reads_in_order();
    an_overrun_is_counted();
    a_foreign_record_ends_the_pass();
    return d9t_summary("test_thread_cpu_switch_ring_consume");
}
