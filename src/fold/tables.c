/* The fleet tables' columns (tables.h). Dictionary encoding where values repeat within a row
 * group: identity strings, workers, spawn locations; delta encoding for wall_time, which rises
 * through a segment, and for task ids: a dictionary of them costs ~14 bits a row (thousands of
 * tasks, each polled a few times), while consecutive rows' ids are close (tasks are numbered
 * as spawned and polled soon after): polls' task_id 1.82 -> 0.58 bytes a poll, wakes' task
 * ids 81.7 k -> 41.3 k bytes on a 1 s executor run. Durations are dictionary encoded too,
 * although a row group holds thousands of them: the writer sorts an integer dictionary, so an
 * index is the duration's rank, in whole bytes, which zstd codes in fewer bytes than the PLAIN
 * value (polls' duration_ns 1.82 -> 1.55 bytes a poll, unknown_ns 1.71 -> 1.47, on a 5 s
 * executor run; sched's parked_ns 105 -> 95 kB; its sched_delay_ns, 97 % distinct there,
 * goes PLAIN by the writer's rule). The attribution parts that are mostly 0 stay
 * PLAIN: zstd packs runs of zeros to nothing, a dictionary costs a hash a value for the same
 * bytes, and DELTA_BINARY_PACKED pays two wide deltas for each nonzero value (story 2, 24 k
 * polls: 5.79 -> 3.97 bytes a poll for the eight; an executor run without switch records, 90 k
 * polls: 2.31 -> 2.02). zstd per column (pq_zstd.h), from each page's bytes and zstd's
 * instructions measured apart (docs/fleet-tables.md, "Measured"): times' deltas and durations'
 * indexes are noise in their low bytes, where zstd's match search (20-60 instructions a byte)
 * finds 1-2 % of the bytes: ENTROPY, Huffman only (~17 a byte); so are the mostly-zero
 * attribution parts, whose runs of zeros ENTROPY hands zstd as matches. polls' wall_time too
 * since its DELTA widths are near whole bytes under ENTROPY (2.198 -> 2.205 bytes a poll on
 * two 5 s executor runs, -22 M instructions); sched's wall_time and cpu_time_ns NONE
 * (UNCOMPRESSED, exact widths: zstd saved 2.4-2.7 % of them), wakes' wall_time ENTROPY (6.9 %).
 * A DELTA column's times in a pattern go at the level whatever it says here (the writer
 * probes each chunk). duration_ns is LEVEL: the writer codes its two-byte indexes at level 1
 * with a wider hash table, as small as level 3. Task ids stay at the level (their deltas
 * repeat: ENTROPY codes them 46 % larger), as do strings and small indexes; sched_delay_ns is
 * FAST (its PLAIN values' zero high bytes: ENTROPY 12 % larger), as the writer makes every
 * integer dictionary page (sorted values: matches). */
#include "fold/tables.h"

#define LEVEL PQ_ZSTD_LEVEL
#define FAST PQ_ZSTD_FAST
#define ENTROPY PQ_ZSTD_ENTROPY
#define NONE PQ_ZSTD_NONE

/* z: the wall_time's zstd (sched's NONE: zstd saved 2.4 % of its exact-width deltas) */
#define IDENTITY_Z(z)                                                                              \
    {"instance", PQ_STRING, false, true, false, LEVEL}, {"boot", PQ_STRING, false, true, false, LEVEL},            \
        {"run", PQ_STRING, false, true, false, LEVEL}, {"segment", PQ_STRING, false, true, false, LEVEL},          \
        {"wall_time", PQ_TIMESTAMP_NS, false, false, true, z}
#define IDENTITY IDENTITY_Z(ENTROPY)

static const pq_column_def polls[D9F_POLLS_COLS] = {
    IDENTITY,
    {"worker_id", PQ_INT64, false, true, false, LEVEL},
    {"task_id", PQ_INT64, false, false, true, LEVEL},
    {"spawn_loc", PQ_STRING, false, true, false, LEVEL},
    {"duration_ns", PQ_INT64, false, true, false, LEVEL},
    {"on_cpu_ns", PQ_INT64, false, true, false, ENTROPY},
    {"lock_ns", PQ_INT64, false, false, false, ENTROPY},
    {"io_ns", PQ_INT64, false, false, false, ENTROPY},
    {"sleep_ns", PQ_INT64, false, false, false, ENTROPY},
    {"fault_ns", PQ_INT64, false, false, false, ENTROPY},
    {"blocked_other_ns", PQ_INT64, false, false, false, ENTROPY},
    {"runnable_ns", PQ_INT64, false, false, false, ENTROPY},
    {"unknown_ns", PQ_INT64, false, true, false, ENTROPY},
    {"off_cpu_uncaptured_ns", PQ_INT64, false, false, false, ENTROPY},
};

static const pq_column_def poll_hist[D9F_HIST_COLS] = {
    IDENTITY,
    {"spawn_loc", PQ_STRING, false, true, false, LEVEL},
    {"worker_id", PQ_INT64, false, true, false, LEVEL},
    {"bucket", PQ_INT32, false, true, false, LEVEL},
    {"bucket_low_ns", PQ_INT64, false, true, false, LEVEL},
    {"bucket_high_ns", PQ_INT64, false, true, false, LEVEL},
    {"bucket_mid_ns", PQ_INT64, false, true, false, LEVEL},
    {"count", PQ_INT64, false, true, false, LEVEL},
    {"min_ns", PQ_INT64, false, true, false, LEVEL},
    {"max_ns", PQ_INT64, false, true, false, LEVEL},
};

static const pq_column_def segments[D9F_SEG_COLS] = {
    IDENTITY,
    {"end_wall_time", PQ_TIMESTAMP_NS, false, false, false, LEVEL},
    {"file", PQ_STRING, false, false, false, LEVEL},
    {"bytes", PQ_INT64, false, false, false, LEVEL},
    {"events", PQ_INT64, false, false, false, LEVEL},
    {"polls", PQ_INT64, false, false, false, LEVEL},
    {"first_ns", PQ_INT64, false, false, false, LEVEL},
    {"last_ns", PQ_INT64, false, false, false, LEVEL},
    {"status", PQ_STRING, false, true, false, LEVEL},
    {"metadata", PQ_STRING, false, false, false, LEVEL},
    {"sources", PQ_STRING, false, false, false, LEVEL},
    {"dropped_events", PQ_INT64, false, false, false, LEVEL},
    {"drops", PQ_STRING, false, false, false, LEVEL},
    {"unmatched_starts", PQ_INT64, false, false, false, LEVEL},
    {"unmatched_ends", PQ_INT64, false, false, false, LEVEL},
};

static const pq_column_def sched[D9F_SCHED_COLS] = {
    IDENTITY_Z(NONE),
    {"kind", PQ_STRING, false, true, false, LEVEL},
    {"worker_id", PQ_INT64, false, true, false, LEVEL},
    {"tid", PQ_INT64, true, true, false, LEVEL},
    {"parked_ns", PQ_INT64, true, true, false, ENTROPY},
    {"sched_delay_ns", PQ_INT64, true, true, false, FAST},
    {"cpu_time_ns", PQ_INT64, true, false, true, NONE},
};

static const pq_column_def wakes[D9F_WAKE_COLS] = {
    IDENTITY,
    {"waker_task_id", PQ_INT64, false, false, true, LEVEL},
    {"woken_task_id", PQ_INT64, false, false, true, LEVEL},
    {"target_worker", PQ_INT64, true, true, false, LEVEL},
};

static const pq_column_def samples[D9F_SAMPLE_COLS] = {
    IDENTITY,
    {"source", PQ_STRING, false, true, false, LEVEL},
    {"worker_id", PQ_INT64, true, true, false, LEVEL},
    {"tid", PQ_INT64, false, true, false, LEVEL},
    {"cpu", PQ_INT64, true, true, false, LEVEL},
    {"stack_id", PQ_INT64, false, true, false, LEVEL},
    {"weight", PQ_INT64, false, true, false, LEVEL},
};

static const pq_column_def stacks[D9F_STACK_COLS] = {
    IDENTITY,
    {"stack_id", PQ_INT64, false, false, false, LEVEL},
    {"depth", PQ_INT32, false, true, false, LEVEL},
    {"frames", PQ_STRING, false, false, false, LEVEL},
};

const d9f_table_def d9f_tables[D9F_TABLES] = {
    [D9F_POLLS] = {"polls", polls, D9F_POLLS_COLS},
    [D9F_POLL_HIST] = {"poll_hist", poll_hist, D9F_HIST_COLS},
    [D9F_SEGMENTS] = {"segments", segments, D9F_SEG_COLS},
    [D9F_SCHED] = {"sched", sched, D9F_SCHED_COLS},
    [D9F_WAKES] = {"wakes", wakes, D9F_WAKE_COLS},
    [D9F_SAMPLES] = {"samples", samples, D9F_SAMPLE_COLS},
    [D9F_STACKS] = {"stacks", stacks, D9F_STACK_COLS},
};
