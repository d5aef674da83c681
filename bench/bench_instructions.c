/* --instructions N: the workload bench/callgrind.sh runs twice under callgrind. Everything
 * but the N pairs is the same in both runs, so the difference in instructions divided by
 * the difference in events is the cost of one event. Pairs go in chunks with a flush between,
 * so no event is dropped (callgrind runs the threads one at a time, and slowly). The pairs are
 * polls, or park/unpark pairs with D9_BENCH_PAIRS=park (at the default schedstat resolution
 * nearly all of them unread, the common case of a busy loop), or span begin/end pairs with
 * D9_BENCH_PAIRS=span, or a poll's end and the next one's begin in one call with
 * D9_BENCH_PAIRS=fused (d9_poll_end_begin: a nested callback's entry or exit), or a park, then
 * its unpark with the readiness wake of one task its poller returned: in one call
 * (d9_unpark_wake_ready) with D9_BENCH_PAIRS=unparkwake, as two (d9_unpark, d9_wake_ready)
 * with D9_BENCH_PAIRS=unparkwake_split; three events each. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define PAIRS_PER_FLUSH 8192

int bench_instructions(const bench_opts *o, uint64_t pairs) {
    char *dir = bench_make_dir(o->scratch, "instructions");
    if (!dir || bench_start(dir, BENCH_SCHEDSTAT_DEFAULT) != 0) return 1;
    d9_worker_begin("bench", 0);
    const d9_loc *where = D9_HERE;
    const char *kind = getenv("D9_BENCH_PAIRS");
    bool parks = kind && strcmp(kind, "park") == 0;
    bool spans = kind && strcmp(kind, "span") == 0;
    bool fused = kind && strcmp(kind, "fused") == 0;
    bool unpark_wake = kind && strcmp(kind, "unparkwake") == 0;
    bool unpark_wake_split = kind && strcmp(kind, "unparkwake_split") == 0;
    uint64_t per_pair = unpark_wake || unpark_wake_split ? 3 : 2;
    if (fused) d9_poll_begin(1, where);
    const d9_loc *span = D9_SPAN_NAME("bench_span");
    for (uint64_t i = 0; i < pairs; i++) {
        if (i > 0 && i % PAIRS_PER_FLUSH == 0) d9_flush();
        if (parks) {
            d9_park();
            d9_unpark();
        } else if (unpark_wake) {
            d9_park();
            d9_unpark_wake_ready((i & 63) + 1);
        } else if (unpark_wake_split) {
            d9_park();
            d9_unpark();
            d9_wake_ready((i & 63) + 1);
        } else if (spans) {
            d9_span_begin(span, i);
            d9_span_end(span, i);
        } else if (fused) {
            d9_poll_end_begin((i & 63) + 1, where);
        } else {
            d9_poll_begin((i & 63) + 1, where);
            d9_poll_end();
        }
    }
    /* Drained by the background thread, so d9_stop on this thread finds nothing left: the
     * recording thread's count then holds the hooks and the loop, not the encoding. */
    if (fused) d9_poll_end();
    d9_flush();
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    bench_remove_tree(dir);
    free(dir);
    printf("events %" PRIu64 " recorded %" PRIu64 " dropped %" PRIu64 " written %" PRIu64 "\n",
           per_pair * pairs, st.events_recorded, st.events_dropped, st.events_written);
    /* The trace must hold what was recorded, or the count of instructions means nothing. */
    return st.events_dropped == 0 && st.events_recorded >= per_pair * pairs ? 0 : 1;
}
