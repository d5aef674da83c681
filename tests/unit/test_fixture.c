/* The real dial9 trace in ../shared/fixtures decodes to exactly the counts that its README
 * lists (streams, frames, events by schema, time span). Skips when the fixture is absent. */
#include <unistd.h>

#include "check.h"
#include "format/decoder.h"

typedef struct expected_count {
    const char *name;
    uint64_t count;
} expected_count;

/* from ../shared/fixtures/README.md */
static const expected_count by_name[] = {
    {"PollStartEvent", 36801},   {"PollEndEvent", 36801},       {"WakeEventEvent", 35552},
    {"TaskDumpEvent", 12952},    {"CpuSampleEvent", 6949},      {"WorkerParkEvent", 6304},
    {"WorkerUnparkEvent", 6304}, {"SymbolTableEntry", 992},     {"QueueSampleEvent", 464},
    {"TaskSpawnEvent", 262},     {"TaskTerminateEvent", 359},   {"SpanCloseEvent", 9890},
    {"ClockSyncEvent", 2},       {"SegmentMetadataEvent", 1},
};
#define N_NAMES (sizeof by_name / sizeof by_name[0])

int main(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/dial9-demo-trace.bin", d9t_shared_dir());
    if (access(path, R_OK) != 0) {
        printf("test_fixture: SKIP: %s not found (set D9_SHARED_DIR)\n", path);
        return 0;
    }
    char err[256];
    d9_decoder *d = d9_dec_open_path(path, NULL, err, sizeof err);
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "%s\n", err);
        return d9t_summary("test_fixture");
    }
    uint64_t counts[N_NAMES] = {0};
    int *slot = NULL; /* schema index -> by_name index or -1, resolved once per schema */
    uint32_t nslots = 0;
    uint64_t first = UINT64_MAX, last = 0, zero_ts = 0, matched = 0;
    uint64_t polls_with_loc = 0;
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) {
        uint32_t idx = ev.schema->index;
        if (idx >= nslots) {
            uint32_t n = idx + 16;
            slot = realloc(slot, n * sizeof *slot);
            for (uint32_t i = nslots; i < n; i++) slot[i] = -2;
            nslots = n;
        }
        if (slot[idx] == -2) {
            slot[idx] = -1;
            for (size_t i = 0; i < N_NAMES; i++)
                if (!strcmp(ev.schema->name, by_name[i].name)) slot[idx] = (int)i;
        }
        if (slot[idx] >= 0) {
            counts[slot[idx]]++;
            matched++;
        }
        /* SymbolTableEntry is written with timestamp 0: it is no point in time */
        if (ev.schema->has_timestamp) {
            if (ev.ts_ns == 0) {
                zero_ts++;
                CHECK_STR(ev.schema->name, "SymbolTableEntry");
            } else {
                if (ev.ts_ns < first) first = ev.ts_ns;
                if (ev.ts_ns > last) last = ev.ts_ns;
            }
        }
        if (!strcmp(ev.schema->name, "PollStartEvent")) {
            d9_dec_str loc;
            if (d9_value_str(d9_event_field(&ev, "spawn_loc"), &loc) && loc.len > 0) polls_with_loc++;
        }
    }
    free(slot);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    CHECK_STR(d9_dec_message(d), "");
    const d9_dec_stats *st = d9_dec_get_stats(d);
    CHECK_EQ_U64(st->streams, 14);
    CHECK_EQ_U64(st->schema_frames, 94);
    CHECK_EQ_U64(st->timestamp_resets, 7678);
    CHECK_EQ_U64(st->string_pool_frames, 10509);
    CHECK_EQ_U64(st->stack_pool_frames, 293);
    CHECK_EQ_U64(st->events, 210639);
    CHECK_EQ_U64(st->bytes, 4047237);
    CHECK_EQ_U64(st->input_bytes, 1406567);
    CHECK(st->gzip);
    CHECK_EQ_U64(st->undefined_pool_ids, 0);
    for (size_t i = 0; i < N_NAMES; i++) {
        if (counts[i] != by_name[i].count)
            fprintf(stderr, "%s: %" PRIu64 " (want %" PRIu64 ")\n", by_name[i].name, counts[i],
                    by_name[i].count);
        CHECK_EQ_U64(counts[i], by_name[i].count);
    }
    CHECK_EQ_U64(zero_ts, 992);
    CHECK_EQ_U64(last - first, 4809856406ull);
    CHECK_EQ_U64(polls_with_loc, 36801);
    CHECK(matched < st->events); /* the rest are span events */
    d9_dec_close(d);
    return d9t_summary("test_fixture");
}
