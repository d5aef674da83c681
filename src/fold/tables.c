/* The fleet tables' columns (tables.h). Dictionary encoding where values repeat within a row
 * group: identity strings, workers, spawn locations, tasks (polled many times each). */
#include "fold/tables.h"

#define IDENTITY                                                                                \
    {"instance", PQ_STRING, false, true}, {"boot", PQ_STRING, false, true},                    \
        {"run", PQ_STRING, false, true}, {"segment", PQ_STRING, false, true},                  \
        {"wall_time", PQ_TIMESTAMP_NS, false, false}

static const pq_column_def polls[D9F_POLLS_COLS] = {
    IDENTITY,
    {"worker_id", PQ_INT64, false, true},
    {"task_id", PQ_INT64, false, true},
    {"spawn_loc", PQ_STRING, false, true},
    {"duration_ns", PQ_INT64, false, false},
};

static const pq_column_def poll_hist[D9F_HIST_COLS] = {
    IDENTITY,
    {"spawn_loc", PQ_STRING, false, true},
    {"worker_id", PQ_INT64, false, true},
    {"bucket", PQ_INT32, false, false},
    {"bucket_low_ns", PQ_INT64, false, false},
    {"bucket_high_ns", PQ_INT64, false, false},
    {"bucket_mid_ns", PQ_INT64, false, false},
    {"count", PQ_INT64, false, false},
    {"min_ns", PQ_INT64, false, false},
    {"max_ns", PQ_INT64, false, false},
};

static const pq_column_def segments[D9F_SEG_COLS] = {
    IDENTITY,
    {"end_wall_time", PQ_TIMESTAMP_NS, false, false},
    {"file", PQ_STRING, false, false},
    {"bytes", PQ_INT64, false, false},
    {"events", PQ_INT64, false, false},
    {"polls", PQ_INT64, false, false},
    {"first_ns", PQ_INT64, false, false},
    {"last_ns", PQ_INT64, false, false},
    {"status", PQ_STRING, false, true},
    {"metadata", PQ_STRING, false, false},
    {"sources", PQ_STRING, false, false},
    {"dropped_events", PQ_INT64, false, false},
    {"drops", PQ_STRING, false, false},
    {"unmatched_starts", PQ_INT64, false, false},
    {"unmatched_ends", PQ_INT64, false, false},
};

static const pq_column_def sched[D9F_SCHED_COLS] = {
    IDENTITY,
    {"kind", PQ_STRING, false, true},
    {"worker_id", PQ_INT64, false, true},
    {"tid", PQ_INT64, true, true},
    {"parked_ns", PQ_INT64, true, false},
    {"sched_delay_ns", PQ_INT64, true, false},
    {"cpu_time_ns", PQ_INT64, true, false},
};

const d9f_table_def d9f_tables[D9F_TABLES] = {
    [D9F_POLLS] = {"polls", polls, D9F_POLLS_COLS},
    [D9F_POLL_HIST] = {"poll_hist", poll_hist, D9F_HIST_COLS},
    [D9F_SEGMENTS] = {"segments", segments, D9F_SEG_COLS},
    [D9F_SCHED] = {"sched", sched, D9F_SCHED_COLS},
};
