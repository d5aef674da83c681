/* A thread's ring moves (grows, shrinks) while the collector drains it: every record is read
 * once, in order, from the ring that holds it, and the collector's reads of the older rings
 * and the thread's writes to the newer ones stay ordered (run under TSan: the `concurrent`
 * label). The collector drains every millisecond on its own thread; this thread is the
 * producer and asks for a move before every burst, up to the configured size and back down,
 * so the moves are counted, not waited for. A burst mixes poll pairs (numbered tasks) with
 * custom events of ~50 words (numbered). The producer keeps what is pending under an eighth
 * of its ring (it waits for a drain, d9_flush, before that and before each move): no drain
 * then asks for a larger ring of its own (D9_RING_GROW_FILL) and no ring fills, so every move
 * is the one asked for, nothing is dropped, and the trace must hold every record in order.
 * Optional argument: the number of bursts (default 300). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"

#define PAIRS_PER_BURST 30 /* and BIG_PER_BURST big records */
#define BIG_PER_BURST 3
#define BIG_TEXT 180 /* bytes of each of its two strings: 2 + 1 + 2 * 24 words */
#define MOST_WORDS 64 /* no record is longer (a poll pair: 4) */
#define LEAST_RING 1024 /* words: a shrink goes down to it, not to the first size (512) */
#define BUFFER_KB 64 /* the largest ring: 8192 words, five sizes above the first */

typedef struct seen {
    uint64_t polls, next_task, out_of_order;
    uint64_t big, next_big, big_bad;
    uint64_t dropped;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "PollStartEvent")) {
        uint64_t task = d9t_field_u(ev, "task_id");
        if (task != s->next_task) s->out_of_order++;
        s->next_task = task + 1;
        s->polls++;
    } else if (d9t_is(ev, "RingMoveBigEvent")) {
        uint64_t seq = d9t_field_u(ev, "seq");
        if (seq != s->next_big) s->big_bad++;
        s->next_big = seq + 1;
        s->big++;
    } else if (d9t_is(ev, "DroppedEventsEvent")) {
        s->dropped += d9t_field_u(ev, "count");
    }
}

/* Ask this thread's next record to move it to a ring twice (grow) or half (shrink) as large:
 * what a drain asks for when it finds the ring filling or quiet (d9_thread_note_fill), here on
 * the producer's own schedule. */
static void ask_move(d9_thread *t, uint8_t kind) {
    atomic_store_explicit(&t->resize_wanted, kind, memory_order_relaxed);
    t->limit = t->head; /* the next record takes the slow path, where a thread moves */
}

int main(int argc, char **argv) {
    int bursts = argc > 1 ? atoi(argv[1]) : 300;
    char *dir = d9t_mkdtemp("ring-moves");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.flush_ms = 1;
    cfg.buffer_kb = BUFFER_KB;
    static const d9_field fields[] = {{"seq", D9_U64}, {"a", D9_STRING}, {"b", D9_STRING}};
    const d9_event_type *big = d9_event_type_define("RingMoveBigEvent", fields, 3);
    CHECK(big != NULL);
    atomic_store(&d9_ring_shrink_after_ns, 3600ull * 1000000000ull); /* moves are this test's */
    CHECK(d9_start(&cfg) == 0);

    char text[BIG_TEXT + 1];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = 0;
    d9_poll_begin(1, D9_HERE); /* registers this thread: its first ring */
    d9_poll_end();
    d9_thread *t = d9_thread_peek();
    CHECK(t != NULL);
    if (!t) return d9t_summary("test_mt_recorder_ring_moves");
    uint64_t max_words = (uint64_t)BUFFER_KB * 1024 / 8, task = 2, big_seq = 0;
    uint64_t moves = 0, grows = 0, shrinks = 0, waits = 0, asked_up = 0;
    bool growing = true;
    for (int b = 0; b < bursts; b++) {
        uint64_t words = t->mask + 1;
        if (growing && words >= max_words) growing = false;
        if (!growing && words <= LEAST_RING) growing = true;
        d9_flush(); /* nothing pending when it moves: no drain finds the old ring's records
                       pending against the new ring's size */
        ask_move(t, growing ? D9_RING_GROW : D9_RING_SHRINK);
        asked_up += growing;
        const d9_ring *before = t->w_ring;
        for (int i = 0; i < PAIRS_PER_BURST; i++) {
            d9_poll_begin(task++, D9_HERE);
            d9_poll_end();
            if (i % (PAIRS_PER_BURST / BIG_PER_BURST) == 0)
                D9_EMIT(big, {.u = big_seq++}, {.s = text}, {.s = text});
            /* under an eighth pending: the bursts must not depend on how fast the collector is */
            if (t->head - atomic_load(&t->tail) + MOST_WORDS > (t->mask + 1) / 8) {
                d9_flush();
                waits++;
            }
        }
        if (t->w_ring != before) moves++;
        if (t->mask + 1 > words) grows++;
        if (t->mask + 1 < words) shrinks++;
    }
    d9_stop();
    printf("%d bursts: %" PRIu64 " moved (%" PRIu64 " to a larger ring, %" PRIu64 " to a smaller one), %" PRIu64
           " waits for a drain\n", bursts, moves, grows, shrinks, waits);
    CHECK_EQ_U64(moves, (uint64_t)bursts); /* each burst moved once, as it asked */
    CHECK_EQ_U64(grows, asked_up);
    CHECK_EQ_U64(shrinks, (uint64_t)bursts - asked_up);

    seen s = {.next_task = 1};
    CHECK_EQ_U64(d9t_decode_run(d9_run_dir(), on_event, &s), 0);
    CHECK_EQ_U64(s.polls, task - 1);
    CHECK_EQ_U64(s.out_of_order, 0);
    CHECK_EQ_U64(s.big, big_seq);
    CHECK_EQ_U64(s.big_bad, 0);
    CHECK_EQ_U64(s.dropped, 0);
    if (d9t_failed == 0) d9t_rm_rf(dir);
    else printf("kept %s\n", dir);
    free(dir);
    return d9t_summary("test_mt_recorder_ring_moves");
}
