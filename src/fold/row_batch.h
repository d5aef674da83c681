/* A table's rows gathered column by column and handed to the Parquet writer a batch at a time
 * (pq_begin_rows ... pq_end_rows): the fold's per-event rows (sched, wakes, samples) cost a
 * store per value instead of a checked put call per value and row. The identity columns are
 * put once per batch: the segment's own values on a writer's first batch of the segment,
 * "the previous row's again" after. */
#ifndef D9_FOLD_ROW_BATCH_H
#define D9_FOLD_ROW_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fold/tables.h"
#include "parquet/pq_writer.h"

#define D9F_BATCH_ROWS 1024
#define D9F_BATCH_MAX_COLS 32 /* more than any table has (d9f_batch_init checks) */

/* A string column's values: ids into a fixed list (such as {"park", "unpark"}). */
typedef struct d9f_batch_strings {
    const char *const *strs;
    const uint32_t *lens;
    uint32_t n;
} d9f_batch_strings;

typedef struct d9f_row_batch {
    const d9f_table_def *table;
    int order_col;  /* 0, or a column whose values group the batch's rows at its flush, in
                       order of value, each group's rows in their order (d9f_batch_flush) */
    pq_writer *w;   /* where the rows go */
    uint32_t n;     /* rows gathered */
    uint32_t limit; /* rows this batch takes: the writer's row group must not overflow */
    bool fresh;     /* the writer has no row of this segment yet: put the identity values */
    int64_t *v[D9F_BATCH_MAX_COLS]; /* per column, D9F_BATCH_ROWS */
    uint8_t *present[D9F_BATCH_MAX_COLS];
    d9f_batch_strings strings[D9F_BATCH_MAX_COLS];
} d9f_row_batch;

/* 0, or -1 out of memory (or a table of too many columns). Columns from D9F_COL_WALL_TIME on get value arrays. */
int d9f_batch_init(d9f_row_batch *b, d9f_table t);
void d9f_batch_free(d9f_row_batch *b);
/* The next row's index r: its values go to v[col][r] (and present[col][r], 0 for a null, in
 * optional columns). w: the writer of every row of the batch (flush before another). Once
 * d9f_batch_full, flush before the next row. */
uint32_t d9f_batch_row(d9f_row_batch *b, pq_writer *w);
static inline bool d9f_batch_full(const d9f_row_batch *b) { return b->n && b->n == b->limit; }
/* Writes the gathered rows (identity values from `identity`: instance, boot, run, segment);
 * with an order_col, grouped by its values when it has at most D9F_BATCH_GROUPS of them (the
 * rows as they came otherwise). */
#define D9F_BATCH_GROUPS 16
/* The first n gathered rows grouped so (flush does it): true when any moved. */
bool d9f_batch_group(d9f_row_batch *b, uint32_t n);
int d9f_batch_flush(d9f_row_batch *b, const char *const identity[4], char *err, size_t errlen);

#endif
