/* Bytes on disk per poll event, before compression: record N poll pairs (one location) into a
 * fresh run, stop, and divide the growth of the run's files over an empty run by 2N. The
 * growth includes everything the events cost on disk: frames, timestamp resets, pool
 * entries, the stream structure. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define PAIRS_PER_FLUSH 8192 /* well inside the default ring: nothing is dropped */

typedef struct bytes_result {
    uint64_t bytes;
    d9_stats stats;
} bytes_result;

static bytes_result record_pairs(const bench_opts *o, uint64_t pairs, uint64_t first_id,
                                 uint64_t id_span) {
    bytes_result res = {0};
    char *dir = bench_make_dir(o->scratch, "bytes");
    if (!dir || bench_start(dir, BENCH_SCHEDSTAT_DEFAULT) != 0) exit(1);
    d9_worker_begin("bench", 0);
    const d9_loc *where = D9_HERE;
    for (uint64_t i = 0; i < pairs; i++) {
        if (i > 0 && i % PAIRS_PER_FLUSH == 0) d9_flush();
        d9_poll_begin(first_id + i % id_span, where);
        d9_poll_end();
    }
    d9_stop();
    d9_get_stats(&res.stats);
    res.bytes = bench_tree_bytes(dir);
    bench_remove_tree(dir);
    free(dir);
    return res;
}

static void row(const char *label, uint64_t pairs, bytes_result base, bytes_result r) {
    double per_event = ((double)r.bytes - (double)base.bytes) / (2.0 * (double)pairs);
    printf("  %-36s %10" PRIu64 " %12" PRIu64 " %8.2f %8" PRIu64 "   <= %.0f B: %s\n", label,
           2 * pairs, r.bytes, per_event, r.stats.events_dropped, TARGET_BYTES_PER_POLL_EVENT,
           bench_verdict(per_event, TARGET_BYTES_PER_POLL_EVENT));
}

void bench_bytes_per_event(const bench_opts *o) {
    uint64_t pairs = o->short_mode ? 200000 : 1000000;
    bytes_result base = record_pairs(o, 0, 1, 1);
    printf("\nBytes on disk per poll event (PollStart + PollEnd, one location, uncompressed;"
           " empty run: %" PRIu64 " B)\n", base.bytes);
    printf("  %-36s %10s %12s %8s %8s   %s\n", "task ids", "events", "file bytes", "B/event",
           "dropped", "target");
    row("1..64 (1-byte varints)", pairs, base, record_pairs(o, pairs, 1, 64));
    row("1000000.. (3-byte varints)", pairs, base, record_pairs(o, pairs, 1000000, pairs));
}
