/* A table's rows a batch at a time (row_batch.h). */
#include "fold/row_batch.h"

#include <stdlib.h>
#include <string.h>

static const uint32_t k_zero_ids[D9F_BATCH_ROWS]; /* every row the identity's one string */

int d9f_batch_init(d9f_row_batch *b, d9f_table t) {
    *b = (d9f_row_batch){.table = &d9f_tables[t]};
    if (b->table->ncols > D9F_BATCH_MAX_COLS) return -1;
    for (int col = D9F_COL_WALL_TIME; col < b->table->ncols; col++) {
        b->v[col] = malloc(D9F_BATCH_ROWS * sizeof *b->v[col]);
        b->present[col] = malloc(D9F_BATCH_ROWS);
        if (!b->v[col] || !b->present[col]) return -1;
    }
    return 0;
}

void d9f_batch_free(d9f_row_batch *b) {
    if (!b->table) return;
    for (int col = 0; col < b->table->ncols; col++) {
        free(b->v[col]);
        free(b->present[col]);
    }
    *b = (d9f_row_batch){0};
}

/* The writer's reason, once it failed (closing it is what says it; the fold is abandoned). */
static int writer_failed(pq_writer *w, char *err, size_t errlen) {
    char e[256];
    pq_writer_close(w, e, sizeof e);
    snprintf(err, errlen, "%s", e);
    return -1;
}

/* perm: the rows grouped by order_col's value (a stable counting sort over its few values);
 * false when they need no moving (one value) or have too many values to group. */
static bool group_rows(const d9f_row_batch *b, uint32_t n, uint32_t perm[D9F_BATCH_ROWS]) {
    const int64_t *key = b->v[b->order_col];
    int64_t keys[D9F_BATCH_GROUPS];
    uint32_t start[D9F_BATCH_GROUPS] = {0};
    uint8_t group[D9F_BATCH_ROWS];
    unsigned ngroups = 0, g = 0;
    for (uint32_t r = 0; r < n; r++) {
        if (!ngroups || keys[g] != key[r]) { /* the previous row's group, most often */
            for (g = 0; g < ngroups && keys[g] != key[r]; g++) {}
            if (g == ngroups) {
                if (ngroups == D9F_BATCH_GROUPS) return false;
                keys[ngroups++] = key[r];
            }
        }
        group[r] = (uint8_t)g;
        start[g]++;
    }
    if (ngroups < 2) return false;
    uint32_t at = 0; /* each group's first place, the groups in order of value */
    uint32_t first[D9F_BATCH_GROUPS];
    for (unsigned done = 0; done < ngroups; done++) {
        unsigned m = 0; /* the smallest value not placed yet (a few groups: no sort) */
        while (start[m] == UINT32_MAX) m++;
        for (unsigned k = m + 1; k < ngroups; k++)
            if (start[k] != UINT32_MAX && keys[k] < keys[m]) m = k;
        first[m] = at;
        at += start[m];
        start[m] = UINT32_MAX;
    }
    for (uint32_t r = 0; r < n; r++) perm[first[group[r]]++] = r;
    return true;
}

/* The batch's value columns (and the optional ones' presence) in the order of perm. */
static void permute_rows(d9f_row_batch *b, uint32_t n, const uint32_t *perm) {
    int64_t v[D9F_BATCH_ROWS];
    uint8_t present[D9F_BATCH_ROWS];
    for (int col = D9F_COL_WALL_TIME; col < b->table->ncols; col++) {
        for (uint32_t r = 0; r < n; r++) v[r] = b->v[col][perm[r]];
        memcpy(b->v[col], v, n * sizeof *v);
        if (!b->table->cols[col].optional) continue;
        for (uint32_t r = 0; r < n; r++) present[r] = b->present[col][perm[r]];
        memcpy(b->present[col], present, n);
    }
}

bool d9f_batch_group(d9f_row_batch *b, uint32_t n) {
    uint32_t perm[D9F_BATCH_ROWS];
    if (!b->order_col || !group_rows(b, n, perm)) return false;
    permute_rows(b, n, perm);
    return true;
}

int d9f_batch_flush(d9f_row_batch *b, const char *const identity[4], char *err, size_t errlen) {
    if (!b->n) return 0;
    pq_writer *w = b->w;
    uint32_t n = b->n;
    b->n = 0;
    d9f_batch_group(b, n);
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
        const uint8_t *present = d->optional ? b->present[col] : NULL;
        if (d->type == PQ_STRING) {
            uint32_t ids[D9F_BATCH_ROWS];
            for (uint32_t r = 0; r < n; r++) ids[r] = (uint32_t)b->v[col][r];
            const d9f_batch_strings *s = &b->strings[col];
            pq_put_str_ids(w, col, ids, present, s->strs, s->lens, s->n);
        } else if (d->type == PQ_INT32) {
            int32_t v[D9F_BATCH_ROWS];
            for (uint32_t r = 0; r < n; r++) v[r] = (int32_t)b->v[col][r];
            pq_put_i32s(w, col, v, present);
        } else {
            pq_put_i64s(w, col, b->v[col], present);
        }
    }
    return pq_end_rows(w) == 0 ? 0 : writer_failed(w, err, errlen);
}

uint32_t d9f_batch_row(d9f_row_batch *b, pq_writer *w) {
    if (b->n == 0) {
        b->w = w;
        uint32_t room = pq_rows_room(w);
        b->limit = room < D9F_BATCH_ROWS ? room : D9F_BATCH_ROWS;
    }
    return b->n++;
}
