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
 * polls: 2.31 -> 2.02). Times and durations are zstd_fast: their pages' low bytes are noise,
 * where zstd's level 3 finds ~1 % more than level 1 for ~40 % more of its instructions; but
 * polls' wall_time and duration_ns stay at level 3 (the table and columns of issue 35's 4
 * bytes a poll, ~0.025 bytes a poll more at level 1), and so do task ids (their deltas
 * repeat: 2-4 % smaller there). */
#include "fold/tables.h"

/* zstd_fast: the wall_time's zstd level (polls' is 3: the table of the 4 bytes a poll) */
#define IDENTITY_Z(zstd_fast)                                                                   \
    {"instance", PQ_STRING, false, true, false, false}, {"boot", PQ_STRING, false, true, false, false},                    \
        {"run", PQ_STRING, false, true, false, false}, {"segment", PQ_STRING, false, true, false, false},                  \
        {"wall_time", PQ_TIMESTAMP_NS, false, false, true, zstd_fast}
#define IDENTITY IDENTITY_Z(true)

static const pq_column_def polls[D9F_POLLS_COLS] = {
    IDENTITY_Z(false),
    {"worker_id", PQ_INT64, false, true, false, false},
    {"task_id", PQ_INT64, false, false, true, false},
    {"spawn_loc", PQ_STRING, false, true, false, false},
    {"duration_ns", PQ_INT64, false, true, false, false},
    {"on_cpu_ns", PQ_INT64, false, true, false, true},
    {"lock_ns", PQ_INT64, false, false, false, false},
    {"io_ns", PQ_INT64, false, false, false, false},
    {"sleep_ns", PQ_INT64, false, false, false, false},
    {"fault_ns", PQ_INT64, false, false, false, false},
    {"blocked_other_ns", PQ_INT64, false, false, false, false},
    {"runnable_ns", PQ_INT64, false, false, false, false},
    {"unknown_ns", PQ_INT64, false, true, false, true},
    {"off_cpu_uncaptured_ns", PQ_INT64, false, false, false, false},
};

static const pq_column_def poll_hist[D9F_HIST_COLS] = {
    IDENTITY,
    {"spawn_loc", PQ_STRING, false, true, false, false},
    {"worker_id", PQ_INT64, false, true, false, false},
    {"bucket", PQ_INT32, false, true, false, false},
    {"bucket_low_ns", PQ_INT64, false, true, false, false},
    {"bucket_high_ns", PQ_INT64, false, true, false, false},
    {"bucket_mid_ns", PQ_INT64, false, true, false, false},
    {"count", PQ_INT64, false, true, false, false},
    {"min_ns", PQ_INT64, false, true, false, false},
    {"max_ns", PQ_INT64, false, true, false, false},
};

static const pq_column_def segments[D9F_SEG_COLS] = {
    IDENTITY,
    {"end_wall_time", PQ_TIMESTAMP_NS, false, false, false, false},
    {"file", PQ_STRING, false, false, false, false},
    {"bytes", PQ_INT64, false, false, false, false},
    {"events", PQ_INT64, false, false, false, false},
    {"polls", PQ_INT64, false, false, false, false},
    {"first_ns", PQ_INT64, false, false, false, false},
    {"last_ns", PQ_INT64, false, false, false, false},
    {"status", PQ_STRING, false, true, false, false},
    {"metadata", PQ_STRING, false, false, false, false},
    {"sources", PQ_STRING, false, false, false, false},
    {"dropped_events", PQ_INT64, false, false, false, false},
    {"drops", PQ_STRING, false, false, false, false},
    {"unmatched_starts", PQ_INT64, false, false, false, false},
    {"unmatched_ends", PQ_INT64, false, false, false, false},
};

static const pq_column_def sched[D9F_SCHED_COLS] = {
    IDENTITY,
    {"kind", PQ_STRING, false, true, false, false},
    {"worker_id", PQ_INT64, false, true, false, false},
    {"tid", PQ_INT64, true, true, false, false},
    {"parked_ns", PQ_INT64, true, true, false, true},
    {"sched_delay_ns", PQ_INT64, true, true, false, true},
    {"cpu_time_ns", PQ_INT64, true, false, true, true},
};

static const pq_column_def wakes[D9F_WAKE_COLS] = {
    IDENTITY,
    {"waker_task_id", PQ_INT64, false, false, true, false},
    {"woken_task_id", PQ_INT64, false, false, true, false},
    {"target_worker", PQ_INT64, true, true, false, false},
};

static const pq_column_def samples[D9F_SAMPLE_COLS] = {
    IDENTITY,
    {"source", PQ_STRING, false, true, false, false},
    {"worker_id", PQ_INT64, true, true, false, false},
    {"tid", PQ_INT64, false, true, false, false},
    {"cpu", PQ_INT64, true, true, false, false},
    {"stack_id", PQ_INT64, false, true, false, false},
    {"weight", PQ_INT64, false, true, false, false},
};

static const pq_column_def stacks[D9F_STACK_COLS] = {
    IDENTITY,
    {"stack_id", PQ_INT64, false, false, false, false},
    {"depth", PQ_INT32, false, true, false, false},
    {"frames", PQ_STRING, false, false, false, false},
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
