/* A thread's ring grows when drains find it filling up, not only when it is full: a steady
 * rate must end with rings that hold what arrives between two drains at the flush interval,
 * not with the collector draining every millisecond to keep a first ring (4 KiB) from filling
 * (that cost memcached 3 % of a CPU: bench/README.md, "Ring growth"). And it shrinks back, half
 * at a time down to the first size, once drains have found it nearly empty for
 * d9_ring_shrink_after_ns, giving its memory back to the budget.
 *
 * The test is its own producer and asks for every drain (d9_flush waits for one), so nothing
 * depends on timing: what a drain sees pending is exactly what was written since the last. */
#include <stdatomic.h>
#include <stdio.h>

#include "check.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

static uint64_t g_task = 1;

static void polls(int n) {
    for (int i = 0; i < n; i++) {
        d9_poll_begin(g_task++, D9_HERE);
        d9_poll_end();
    }
}

static uint64_t ring_words(void) {
    d9_thread *t = d9_thread_peek();
    return t && t->ring ? t->mask + 1 : 0;
}

/* Words one poll pair takes in the ring, measured rather than assumed. */
static uint64_t words_per_pair(void) {
    d9_thread *t = d9_thread_peek();
    uint64_t before = t->head;
    polls(8);
    return (t->head - before + 7) / 8;
}

/* Poll pairs until the thread has gone past the end of its ring: the hooks' slow path, where a
 * thread moves to a larger ring. Called just after a drain, so the ring has room: never full. */
static void polls_past_ring_end(uint64_t pair) {
    d9_thread *t = d9_thread_peek();
    uint64_t left = t->mask + 1 - (t->head & t->mask);
    polls((int)(left / pair) + 2);
}

/* The same, draining after every `chunk` pairs, so no drain finds more than a chunk pending. */
static void polls_past_ring_end_quietly(uint64_t pair, int chunk) {
    d9_thread *t = d9_thread_peek();
    uint64_t end = (t->head & ~t->mask) + t->mask + 1;
    while (t->head < end) {
        polls(chunk);
        d9_flush();
    }
}

static uint64_t g_starts;
static void count_starts(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (d9t_is(ev, "PollStartEvent")) g_starts++;
}

int main(void) {
    char *dir = d9t_mkdtemp("ring-growth");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedule_profile = false;
    cfg.task_dumps = false;
    cfg.cpu_profile = false;
    cfg.flush_ms = 60000; /* no drain but those asked for */
    CHECK(d9_start(&cfg) == 0);

    polls(1); /* registers this thread: its first ring */
    d9_flush();
    uint64_t first = ring_words();
    CHECK_EQ_U64(first, D9_RING_FIRST_WORDS);
    uint64_t pair = words_per_pair(); /* 8 pairs: under D9_RING_GROW_FILL of the first ring */
    CHECK(pair >= 2 && 8 * pair < first * D9_RING_GROW_FILL);
    d9_flush();

    /* Drains that find little pending (under D9_RING_GROW_FILL of the ring) leave it as it is,
     * however many times it wraps. */
    int few = (int)((double)first * D9_RING_GROW_FILL / 2 / (double)pair);
    CHECK(few >= 1);
    for (uint64_t written = 0; written < 4 * first; written += (uint64_t)few * pair) {
        polls(few);
        d9_flush();
    }
    printf("%" PRIu64 " words a poll pair; %d pairs between drains (%.0f %% of the ring): %" PRIu64 " words\n",
           pair, few, 100.0 * few * (double)pair / (double)first, ring_words());
    CHECK_EQ_U64(ring_words(), first);

    /* A drain that finds a third of the ring pending asks for a larger one: the thread moves to
     * it when it next reaches its ring's end, without having been full. */
    int third = (int)((double)first / 3 / (double)pair);
    polls(third);
    d9_flush();
    CHECK_EQ_U64(ring_words(), first); /* asked for, not taken yet: the hooks do not look */
    polls_past_ring_end(pair);
    printf("%d pairs between drains (%.0f %% of the ring), then a wrap: %" PRIu64 " words\n", third,
           100.0 * third * (double)pair / (double)first, ring_words());
    CHECK_EQ_U64(ring_words(), 2 * first);
    d9_flush();

    /* It keeps growing while drains find it filling, up to the configured size. */
    uint64_t max_words = (uint64_t)cfg.buffer_kb * 1024 / 8;
    int rounds = 0;
    for (uint64_t before = 0; ring_words() != before && rounds < 20; rounds++) {
        before = ring_words();
        polls((int)(before / 3 / pair));
        d9_flush();
        polls_past_ring_end(pair);
        d9_flush();
    }
    printf("after %d more rounds: %" PRIu64 " words (the largest: %" PRIu64 ")\n", rounds, ring_words(), max_words);
    CHECK_EQ_U64(ring_words(), max_words);

    /* Quiet drains (under D9_RING_SHRINK_FILL pending) for less than d9_ring_shrink_after_ns
     * (here an hour) leave it as it is, however many times it wraps. */
    atomic_store(&d9_ring_shrink_after_ns, 3600ull * 1000000000ull);
    uint64_t top = ring_words();
    int quiet = (int)((double)top * D9_RING_SHRINK_FILL / 4 / (double)pair);
    polls_past_ring_end_quietly(pair, quiet);
    polls_past_ring_end_quietly(pair, quiet);
    printf("quiet drains (%.1f %% of the ring) for less than the wait, two wraps: %" PRIu64 " words\n",
           100.0 * quiet * (double)pair / (double)top, ring_words());
    CHECK_EQ_U64(ring_words(), top);

    /* Between the two thresholds: neither. */
    int middle = (int)((double)top / 16 / (double)pair);
    atomic_store(&d9_ring_shrink_after_ns, 0);
    polls_past_ring_end_quietly(pair, middle);
    printf("drains of %.1f %% of the ring with no wait: %" PRIu64 " words\n",
           100.0 * middle * (double)pair / (double)top, ring_words());
    CHECK_EQ_U64(ring_words(), top);

    /* Quiet for the whole wait (none here): half as large at the next ring end, and again,
     * down to the first size; the budget gets the memory back. */
    uint64_t used_at_top = d9_ring_bytes_used();
    rounds = 0;
    for (uint64_t before = 0; ring_words() != before && rounds < 20; rounds++) {
        before = ring_words();
        polls_past_ring_end_quietly(pair, (int)((double)before * D9_RING_SHRINK_FILL / 4 / (double)pair) + 1);
    }
    d9_flush(); /* the collector frees the rings it has read */
    printf("quiet for the wait: %" PRIu64 " words after %d rounds; ring memory %" PRIu64 " -> %" PRIu64 " bytes\n",
           ring_words(), rounds, used_at_top, d9_ring_bytes_used());
    CHECK_EQ_U64(ring_words(), first);
    CHECK(d9_ring_bytes_used() < used_at_top);
    CHECK(d9_ring_bytes_used() <= used_at_top - (top - first) * 8);

    d9_stats st;
    d9_get_stats(&st);
    d9_stop();
    CHECK_EQ_U64(st.events_dropped, 0);
    CHECK(d9t_decode_run(d9_run_dir(), count_starts, NULL) == 0);
    CHECK_EQ_U64(g_starts, g_task - 1); /* every poll is in the trace */
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_ring_growth");
}
