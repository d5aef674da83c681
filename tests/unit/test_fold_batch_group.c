/* A batch's rows grouped by a column's values before they are written (fold/row_batch.h: the
 * sched table's rows by worker, so that each thread's cpu_time_ns rises through its rows):
 * the groups in order of value, each group's rows in the order they came, every column (and
 * the optional ones' presence) moved with its row; a batch of one value, or of more values
 * than D9F_BATCH_GROUPS, as it came. */
#include "check.h"
#include "fold/row_batch.h"

/* n rows: worker w(r), and each value column r * 10 + col, present when (r + col) % 3 != 0 */
static void fill(d9f_row_batch *b, uint32_t n, int64_t (*worker)(uint32_t)) {
    for (uint32_t r = 0; r < n; r++) {
        for (int col = D9F_COL_WALL_TIME; col < b->table->ncols; col++) {
            b->v[col][r] = (int64_t)r * 10 + col;
            b->present[col][r] = (r + (uint32_t)col) % 3 != 0;
        }
        b->v[D9F_SCHED_WORKER][r] = worker(r);
    }
}

static int64_t interleaved(uint32_t r) { return (int64_t)(2 - (r * 7 + r / 5) % 3) * 4 + 1; } /* 9 first, 5, 1 */
static int64_t one(uint32_t r) { return (void)r, 3; }
static int64_t many(uint32_t r) { return (int64_t)(r % (D9F_BATCH_GROUPS + 1)); }

static void test_grouped(void) {
    d9f_row_batch b;
    CHECK(d9f_batch_init(&b, D9F_SCHED) == 0);
    b.order_col = D9F_SCHED_WORKER;
    uint32_t n = 1000;
    fill(&b, n, interleaved);
    CHECK(d9f_batch_group(&b, n));
    size_t bad = 0;
    int64_t prev_worker = INT64_MIN, prev_row = -1;
    uint8_t seen[1000] = {0};
    for (uint32_t i = 0; i < n; i++) {
        int64_t row = b.v[D9F_COL_WALL_TIME][i] / 10; /* where this row came */
        int64_t w = b.v[D9F_SCHED_WORKER][i];
        bad += w < prev_worker;                        /* groups in order of value */
        bad += w == prev_worker && row < prev_row;     /* a group's rows in their order */
        bad += w != interleaved((uint32_t)row);        /* the worker moved with its row */
        for (int col = D9F_COL_WALL_TIME; col < b.table->ncols; col++) {
            if (col == D9F_SCHED_WORKER) continue;
            bad += b.v[col][i] != row * 10 + col;
            if (b.table->cols[col].optional) bad += b.present[col][i] != ((row + col) % 3 != 0);
        }
        seen[row]++;
        prev_worker = w;
        prev_row = row;
    }
    for (uint32_t r = 0; r < n; r++) bad += seen[r] != 1;
    CHECK_EQ_U64(bad, 0);
    d9f_batch_free(&b);
}

static void test_left_as_they_came(void) {
    int64_t (*workers[])(uint32_t) = {one, many};
    for (int k = 0; k < 2; k++) {
        d9f_row_batch b;
        CHECK(d9f_batch_init(&b, D9F_SCHED) == 0);
        b.order_col = D9F_SCHED_WORKER;
        fill(&b, 500, workers[k]);
        CHECK(!d9f_batch_group(&b, 500));
        size_t bad = 0;
        for (uint32_t i = 0; i < 500; i++) bad += b.v[D9F_COL_WALL_TIME][i] != (int64_t)i * 10 + D9F_COL_WALL_TIME;
        CHECK_EQ_U64(bad, 0);
        d9f_batch_free(&b);
    }
    d9f_row_batch b; /* no order column: never moved */
    CHECK(d9f_batch_init(&b, D9F_SCHED) == 0);
    fill(&b, 100, interleaved);
    CHECK(!d9f_batch_group(&b, 100));
    d9f_batch_free(&b);
}

int main(void) {
    test_grouped();
    test_left_as_they_came();
    return d9t_summary("fold_batch_group");
}
