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

/* Grouped batches (order_col set): each of the first D9F_BATCH_GROUPS values of order_col has
 * a stripe of D9F_BATCH_ROWS rows, where its rows are placed as they come, so that the flush
 * writes each stripe in turn, in order of value, with no row moved; rows of further values go
 * to one more stripe, and such a batch is written as it came (the arrival log says where each
 * row went). */
#define D9F_BATCH_GROUPS 16
#define D9F_BATCH_STRIPES (D9F_BATCH_GROUPS + 2) /* the groups, the rest, the flush's scratch */

typedef struct d9f_row_batch {
    const d9f_table_def *table;
    int order_col;  /* 0, or a column whose values group the batch's rows at its flush, in
                       order of value, each group's rows in their order (d9f_batch_flush) */
    pq_writer *w;   /* where the rows go */
    uint32_t n;     /* rows gathered */
    uint32_t limit; /* rows this batch takes: the writer's row group must not overflow */
    bool fresh;     /* the writer has no row of this segment yet: put the identity values */
    int64_t *v[D9F_BATCH_MAX_COLS]; /* per column, D9F_BATCH_ROWS (a stripe each when grouped) */
    uint8_t *present[D9F_BATCH_MAX_COLS];
    d9f_batch_strings strings[D9F_BATCH_MAX_COLS];
    /* grouped: the groups' values and rows, the latest row's group, each row's stripe */
    int64_t group_key[D9F_BATCH_GROUPS];
    uint32_t group_rows[D9F_BATCH_GROUPS + 1];
    uint32_t ngroups, last_group;
    uint8_t *arrival;
} d9f_row_batch;

/* 0, or -1 out of memory (or a table of too many columns). Columns from D9F_COL_WALL_TIME on
 * get value arrays; order_col: 0, or the column that groups the rows (a stripe per group). */
int d9f_batch_init(d9f_row_batch *b, d9f_table t, int order_col);
void d9f_batch_free(d9f_row_batch *b);

/* The stripe of a grouped batch's row of value key (the rest's when the groups are taken). */
uint32_t d9f_batch_group_of(d9f_row_batch *b, int64_t key);

/* The index of the next row, begun (b->n > 0) and not full: its values go to v[col][index]
 * (and present[col][index], 0 for a null, in optional columns); key: its order_col value
 * (stored there too), ignored when the batch is not grouped. */
static inline uint32_t d9f_batch_next(d9f_row_batch *b, int64_t key) {
    uint32_t n = b->n++;
    if (!b->order_col) return n;
    uint32_t g = b->last_group; /* the previous row's group, most often */
    if (b->group_key[g] != key || g >= b->ngroups) g = d9f_batch_group_of(b, key);
    b->arrival[n] = (uint8_t)g;
    uint32_t r = g * D9F_BATCH_ROWS + b->group_rows[g]++;
    b->v[b->order_col][r] = key;
    return r;
}

/* The first row's index, of a batch whose rows go to w. Once d9f_batch_full, flush before
 * the next row. */
uint32_t d9f_batch_row(d9f_row_batch *b, pq_writer *w, int64_t key);
static inline bool d9f_batch_full(const d9f_row_batch *b) { return b->n && b->n == b->limit; }
/* Where the gathered rows are, in the order the flush writes them: with an order_col, grouped
 * by its values in order of value when it has at most D9F_BATCH_GROUPS of them (the rows as
 * they came otherwise). rows: b->n indexes into v; false when the batch is written as it came. */
bool d9f_batch_order(const d9f_row_batch *b, uint32_t *rows);
/* Writes the gathered rows (identity values from `identity`: instance, boot, run, segment). */
int d9f_batch_flush(d9f_row_batch *b, const char *const identity[4], char *err, size_t errlen);

#endif
