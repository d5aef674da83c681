/* The fleet tables `dial9 fold` writes (docs/fleet-tables.md): their names and columns, in one
 * place for the writer, the docs' DDL test and the benchmark. Every table starts with the
 * identity columns (instance, boot, run, segment) and a wall-clock time; `service`, `date` and
 * `hour` are the Hive partition (the directory), not columns of the files. */
#ifndef D9_FOLD_TABLES_H
#define D9_FOLD_TABLES_H

#include "parquet/pq_writer.h"

typedef enum d9f_table {
    D9F_POLLS,
    D9F_POLL_HIST,
    D9F_SEGMENTS,
    D9F_SCHED,
    D9F_WAKES,
    D9F_SAMPLES,
    D9F_STACKS,
    D9F_TABLES,
} d9f_table;

/* The identity columns every table starts with, in this order. */
enum { D9F_COL_INSTANCE, D9F_COL_BOOT, D9F_COL_RUN, D9F_COL_SEGMENT, D9F_COL_WALL_TIME, D9F_COMMON_COLS };

enum { /* polls */
    D9F_POLLS_WORKER = D9F_COMMON_COLS, D9F_POLLS_TASK, D9F_POLLS_SPAWN_LOC, D9F_POLLS_DURATION,
    /* the attribution's parts, in model/attribution.h's order (D9M_PART_*) */
    D9F_POLLS_ON_CPU, D9F_POLLS_LOCK, D9F_POLLS_IO, D9F_POLLS_SLEEP, D9F_POLLS_FAULT,
    D9F_POLLS_BLOCKED_OTHER, D9F_POLLS_RUNNABLE, D9F_POLLS_UNKNOWN, D9F_POLLS_OFF_CPU_UNCAPTURED,
    D9F_POLLS_COLS
};
enum { /* poll_hist */
    D9F_HIST_SPAWN_LOC = D9F_COMMON_COLS, D9F_HIST_WORKER, D9F_HIST_BUCKET, D9F_HIST_LOW,
    D9F_HIST_HIGH, D9F_HIST_MID, D9F_HIST_COUNT, D9F_HIST_MIN, D9F_HIST_MAX,
    D9F_HIST_COLS
};
enum { /* segments */
    D9F_SEG_END_TIME = D9F_COMMON_COLS, D9F_SEG_FILE, D9F_SEG_BYTES, D9F_SEG_EVENTS,
    D9F_SEG_POLLS, D9F_SEG_FIRST_NS, D9F_SEG_LAST_NS, D9F_SEG_STATUS, D9F_SEG_METADATA,
    D9F_SEG_SOURCES, D9F_SEG_DROPPED, D9F_SEG_DROPS, D9F_SEG_UNMATCHED_STARTS,
    D9F_SEG_UNMATCHED_ENDS, D9F_SEG_COLS
};
enum { /* sched */
    D9F_SCHED_KIND = D9F_COMMON_COLS, D9F_SCHED_WORKER, D9F_SCHED_TID, D9F_SCHED_PARKED,
    D9F_SCHED_DELAY, D9F_SCHED_CPU_TIME, D9F_SCHED_COLS
};

enum { /* wakes */
    D9F_WAKE_WAKER = D9F_COMMON_COLS, D9F_WAKE_WOKEN, D9F_WAKE_TARGET, D9F_WAKE_COLS
};
enum { /* samples */
    D9F_SAMPLE_SOURCE = D9F_COMMON_COLS, D9F_SAMPLE_WORKER, D9F_SAMPLE_TID, D9F_SAMPLE_CPU,
    D9F_SAMPLE_STACK, D9F_SAMPLE_WEIGHT, D9F_SAMPLE_COLS
};
enum { /* stacks */
    D9F_STACK_ID = D9F_COMMON_COLS, D9F_STACK_DEPTH, D9F_STACK_FRAMES, D9F_STACK_COLS
};

typedef struct d9f_table_def {
    const char *name;
    const pq_column_def *cols;
    int ncols;
} d9f_table_def;

extern const d9f_table_def d9f_tables[D9F_TABLES];

#endif
