/* A table's rows a batch at a time (row_batch.h). */
#include "fold/row_batch.h"

#include <stdlib.h>
#include <string.h>

static const uint32_t k_zero_ids[D9F_BATCH_ROWS]; /* every row the identity's one string */

int d9f_batch_init(d9f_row_batch *b, d9f_table t, int order_col) {
    *b = (d9f_row_batch){.table = &d9f_tables[t], .order_col = order_col};
    if (b->table->ncols > D9F_BATCH_MAX_COLS || order_col >= b->table->ncols) return -1;
    size_t rows = order_col ? (size_t)D9F_BATCH_STRIPES * D9F_BATCH_ROWS : D9F_BATCH_ROWS;
    for (int col = D9F_COL_WALL_TIME; col < b->table->ncols; col++) {
        b->v[col] = malloc(rows * sizeof *b->v[col]);
        b->present[col] = malloc(rows);
        if (!b->v[col] || !b->present[col]) return -1;
    }
    if (order_col && !(b->arrival = malloc(D9F_BATCH_ROWS))) return -1;
    return 0;
}

void d9f_batch_free(d9f_row_batch *b) {
    if (!b->table) return;
    for (int col = 0; col < b->table->ncols; col++) {
        free(b->v[col]);
        free(b->present[col]);
    }
    free(b->arrival);
    *b = (d9f_row_batch){0};
}

uint32_t d9f_batch_group_of(d9f_row_batch *b, int64_t key) {
    uint32_t g = 0;
    while (g < b->ngroups && b->group_key[g] != key) g++;
    if (g == b->ngroups) {
        if (g == D9F_BATCH_GROUPS) return D9F_BATCH_GROUPS; /* the rest's stripe */
        b->group_key[b->ngroups++] = key;
    }
    b->last_group = g;
    return g;
}

uint32_t d9f_batch_row(d9f_row_batch *b, pq_writer *w, int64_t key) {
    if (b->n == 0) {
        b->w = w;
        uint32_t room = pq_rows_room(w);
        b->limit = room < D9F_BATCH_ROWS ? room : D9F_BATCH_ROWS;
        b->ngroups = b->last_group = 0;
        memset(b->group_rows, 0, sizeof b->group_rows);
    }
    return d9f_batch_next(b, key);
}

/* The groups in order of value (a few: no sort); false when the batch is written as it came
 * (one group, or rows of more values than the groups). */
static bool group_order(const d9f_row_batch *b, uint32_t order[D9F_BATCH_GROUPS]) {
    if (!b->order_col || b->ngroups < 2 || b->group_rows[D9F_BATCH_GROUPS]) return false;
    bool placed[D9F_BATCH_GROUPS] = {0};
    for (uint32_t k = 0; k < b->ngroups; k++) {
        uint32_t m = 0;
        while (placed[m]) m++;
        for (uint32_t g = m + 1; g < b->ngroups; g++)
            if (!placed[g] && b->group_key[g] < b->group_key[m]) m = g;
        placed[m] = true;
        order[k] = m;
    }
    return true;
}

/* the index of each row of a grouped batch as it came, from the arrival log */
static void arrival_rows(const d9f_row_batch *b, uint32_t *rows) {
    uint32_t next[D9F_BATCH_GROUPS + 1];
    for (uint32_t g = 0; g <= D9F_BATCH_GROUPS; g++) next[g] = g * D9F_BATCH_ROWS;
    for (uint32_t r = 0; r < b->n; r++) rows[r] = next[b->arrival[r]]++;
}

bool d9f_batch_order(const d9f_row_batch *b, uint32_t *rows) {
    uint32_t order[D9F_BATCH_GROUPS];
    if (!group_order(b, order)) {
        if (b->order_col) arrival_rows(b, rows);
        else
            for (uint32_t r = 0; r < b->n; r++) rows[r] = r;
        return false;
    }
    uint32_t at = 0;
    for (uint32_t k = 0; k < b->ngroups; k++)
        for (uint32_t i = 0; i < b->group_rows[order[k]]; i++) rows[at++] = order[k] * D9F_BATCH_ROWS + i;
    return true;
}

/* The writer's reason, once it failed (closing it is what says it; the fold is abandoned). */
static int writer_failed(pq_writer *w, char *err, size_t errlen) {
    char e[256];
    pq_writer_close(w, e, sizeof e);
    snprintf(err, errlen, "%s", e);
    return -1;
}

/* n rows from row `first` of every value column into w, in one batch of the writer. */
static int put_rows(d9f_row_batch *b, uint32_t first, uint32_t n, const char *const identity[4]) {
    pq_writer *w = b->w;
    pq_begin_rows(w, n);
    for (int col = D9F_COL_INSTANCE; col <= D9F_COL_SEGMENT; col++) {
        if (b->fresh) {
            uint32_t len = (uint32_t)strlen(identity[col]);
            pq_put_str_ids(w, col, k_zero_ids, NULL, &identity[col], &len, 1);
        } else {
            pq_put_same_n(w, col);
        }
    }
    b->fresh = false;
    for (int col = D9F_COL_WALL_TIME; col < b->table->ncols; col++) {
        const pq_column_def *d = &b->table->cols[col];
        const int64_t *v = b->v[col] + first;
        const uint8_t *present = d->optional ? b->present[col] + first : NULL;
        if (d->type == PQ_STRING) {
            uint32_t ids[D9F_BATCH_ROWS];
            for (uint32_t r = 0; r < n; r++) ids[r] = (uint32_t)v[r];
            const d9f_batch_strings *s = &b->strings[col];
            pq_put_str_ids(w, col, ids, present, s->strs, s->lens, s->n);
        } else if (d->type == PQ_INT32) {
            int32_t v32[D9F_BATCH_ROWS];
            for (uint32_t r = 0; r < n; r++) v32[r] = (int32_t)v[r];
            pq_put_i32s(w, col, v32, present);
        } else {
            pq_put_i64s(w, col, v, present);
        }
    }
    return pq_end_rows(w);
}

/* A grouped batch with rows of more values than its groups: copied as they came into the
 * scratch stripe, then written. */
static int put_as_they_came(d9f_row_batch *b, const char *const identity[4]) {
    uint32_t rows[D9F_BATCH_ROWS];
    arrival_rows(b, rows);
    uint32_t scratch = (D9F_BATCH_STRIPES - 1) * D9F_BATCH_ROWS;
    for (int col = D9F_COL_WALL_TIME; col < b->table->ncols; col++)
        for (uint32_t r = 0; r < b->n; r++) {
            b->v[col][scratch + r] = b->v[col][rows[r]];
            b->present[col][scratch + r] = b->present[col][rows[r]];
        }
    return put_rows(b, scratch, b->n, identity);
}

int d9f_batch_flush(d9f_row_batch *b, const char *const identity[4], char *err, size_t errlen) {
    if (!b->n) return 0;
    uint32_t order[D9F_BATCH_GROUPS];
    int rc = 0;
    if (group_order(b, order)) { /* each group's stripe in turn: its own batch of the writer */
        for (uint32_t k = 0; k < b->ngroups && rc == 0; k++)
            rc = put_rows(b, order[k] * D9F_BATCH_ROWS, b->group_rows[order[k]], identity);
    } else if (b->order_col && b->group_rows[D9F_BATCH_GROUPS]) {
        rc = put_as_they_came(b, identity);
    } else {
        rc = put_rows(b, 0, b->n, identity); /* one stripe: the rows as they came */
    }
    b->n = 0;
    return rc == 0 ? 0 : writer_failed(b->w, err, errlen);
}
