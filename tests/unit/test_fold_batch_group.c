/* A batch's rows grouped by a column's values as they are gathered (fold/row_batch.h: the
 * sched table's rows by worker, so that each thread's cpu_time_ns rises through its rows):
 * each value's rows in a stripe of their own, written in order of value, each group's rows in
 * the order they came, every column (and the optional ones' presence) with its row; a batch
 * of one value, or of more values than D9F_BATCH_GROUPS, as it came. The writer takes every
 * batch (d9f_batch_flush). */
#include <stdio.h>

#include "check.h"
#include "fold/row_batch.h"

/* n rows into b (writing to w): worker w(r), and each other value column r * 10 + col, present
 * when (r + col) % 3 != 0 */
static void fill(d9f_row_batch *b, pq_writer *w, uint32_t n, int64_t (*worker)(uint32_t)) {
    for (uint32_t r = 0; r < n; r++) {
        uint32_t i = r == 0 ? d9f_batch_row(b, w, worker(r)) : d9f_batch_next(b, worker(r));
        for (int col = D9F_COL_WALL_TIME; col < b->table->ncols; col++) {
            if (col == b->order_col) continue;
            b->v[col][i] = (int64_t)r * 10 + col;
            b->present[col][i] = (r + (uint32_t)col) % 3 != 0;
        }
        b->present[D9F_SCHED_WORKER][i] = 1;
        b->v[D9F_SCHED_KIND][i] = r % 2; /* a string column's id: park or unpark */
    }
}

static int64_t interleaved(uint32_t r) { return (int64_t)(2 - (r * 7 + r / 5) % 3) * 4 + 1; } /* 9 first, 5, 1 */
static int64_t one(uint32_t r) { return (void)r, 3; }
static int64_t many(uint32_t r) { return (int64_t)(r % (D9F_BATCH_GROUPS + 1)); }

static const char *const kinds[] = {"park", "unpark"};
static const uint32_t kind_lens[] = {4, 6};
static const char *const identity[4] = {"instance", "boot", "run", "segment"};

static pq_writer *open_writer(FILE **f) {
    char err[256];
    *f = tmpfile();
    CHECK(*f != NULL);
    const d9f_table_def *t = &d9f_tables[D9F_SCHED];
    pq_writer *w = pq_writer_open(*f, t->cols, t->ncols, NULL, err, sizeof err);
    CHECK(w != NULL);
    return w;
}

/* the batch written whole, and the writer closed without complaint */
static void flush_and_close(d9f_row_batch *b, pq_writer *w, FILE *f) {
    char err[256] = "";
    int rc = d9f_batch_flush(b, identity, err, sizeof err);
    if (rc != 0) fprintf(stderr, "flush: %s\n", err);
    CHECK(rc == 0);
    CHECK(pq_writer_close(w, err, sizeof err) == 0);
    fclose(f);
}

static void init(d9f_row_batch *b, int order_col) {
    CHECK(d9f_batch_init(b, D9F_SCHED, order_col) == 0);
    b->strings[D9F_SCHED_KIND] = (d9f_batch_strings){kinds, kind_lens, 2};
    b->fresh = true;
}

static void test_grouped(void) {
    FILE *f;
    pq_writer *w = open_writer(&f);
    d9f_row_batch b;
    init(&b, D9F_SCHED_WORKER);
    uint32_t n = 1000, rows[D9F_BATCH_ROWS];
    fill(&b, w, n, interleaved);
    CHECK(d9f_batch_order(&b, rows));
    size_t bad = 0;
    int64_t prev_worker = INT64_MIN, prev_row = -1;
    uint8_t seen[1000] = {0};
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = rows[i];
        int64_t row = b.v[D9F_COL_WALL_TIME][at] / 10; /* where this row came */
        int64_t wk = b.v[D9F_SCHED_WORKER][at];
        bad += wk < prev_worker;                        /* groups in order of value */
        bad += wk == prev_worker && row < prev_row;     /* a group's rows in their order */
        bad += wk != interleaved((uint32_t)row);        /* the worker with its row */
        for (int col = D9F_COL_WALL_TIME; col < b.table->ncols; col++) {
            if (col == D9F_SCHED_WORKER || col == D9F_SCHED_KIND) continue;
            bad += b.v[col][at] != row * 10 + col;
            if (b.table->cols[col].optional) bad += b.present[col][at] != ((row + col) % 3 != 0);
        }
        seen[row]++;
        prev_worker = wk;
        prev_row = row;
    }
    for (uint32_t r = 0; r < n; r++) bad += seen[r] != 1;
    CHECK_EQ_U64(bad, 0);
    flush_and_close(&b, w, f);
    d9f_batch_free(&b);
}

static void test_left_as_they_came(void) {
    int64_t (*workers[])(uint32_t) = {one, many, interleaved};
    for (int k = 0; k < 3; k++) {
        FILE *f;
        pq_writer *w = open_writer(&f);
        d9f_row_batch b;
        init(&b, k < 2 ? D9F_SCHED_WORKER : 0); /* the last: no order column, never grouped */
        uint32_t rows[D9F_BATCH_ROWS];
        fill(&b, w, 500, workers[k]);
        CHECK(!d9f_batch_order(&b, rows));
        size_t bad = 0;
        for (uint32_t i = 0; i < 500; i++) bad += b.v[D9F_COL_WALL_TIME][rows[i]] != (int64_t)i * 10 + D9F_COL_WALL_TIME;
        CHECK_EQ_U64(bad, 0);
        flush_and_close(&b, w, f);
        d9f_batch_free(&b);
    }
}

int main(void) {
    test_grouped();
    test_left_as_they_came();
    return d9t_summary("fold_batch_group");
}
