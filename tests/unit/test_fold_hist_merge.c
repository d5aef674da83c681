/* poll_hist's merge (fold/hist_merge.h): rows summed in place as they come (every few rows, so
 * that a big fold's memory follows its keys) write the same file, byte for byte, as the same
 * rows summed once at the end, and rows added in another order (the segments folded in
 * another order) write it too. The rows are real histograms' (hist_rows.h) of pseudo-random
 * durations: 6 segments of 2 runs, 5 spawn locations, 3 workers. Then the file's one summed
 * group against one histogram of all the polls: same rows (checked through the merge's own
 * output of that single histogram, written by a merge that sums nothing: segment "", as a
 * row summing several segments says). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "fold/hist_merge.h"
#include "fold/tables.h"

#define SEGMENTS 6
#define LOCS 5
#define WORKERS 3

static const char *const k_locs[LOCS] = {"a.rs:1", "b.rs:2", "c.rs:3", "<unknown>", "d.rs:40"};

static d9t_rng rng = {D9T_RNG_SEED};

typedef struct group {
    d9a_hist h;
    int64_t first_wall;
} group;

static group groups[SEGMENTS][LOCS][WORKERS];

static void make_histograms(void) {
    for (int s = 0; s < SEGMENTS; s++)
        for (int l = 0; l < LOCS; l++)
            for (int w = 0; w < WORKERS; w++) {
                group *g = &groups[s][l][w];
                g->first_wall = 1796558400000000000ll + s * 1000000000ll + (int64_t)(d9t_rng_next(&rng) % 1000000);
                int polls = (int)(d9t_rng_next(&rng) % 300); /* some groups empty */
                for (int i = 0; i < polls; i++) {
                    /* log-uniform from ~50 ns to ~50 ms, by location */
                    int e = 6 + (int)(d9t_rng_next(&rng) % (uint64_t)(10 + l * 2));
                    d9a_hist_add(&g->h, (1ull << e) + d9t_rng_next(&rng) % (1ull << e));
                }
            }
}

typedef struct add_ctx {
    d9f_hist_merge *m;
    const char *loc;
    uint64_t worker;
    int64_t wall;
    int rc;
} add_ctx;

static int add_row(const d9f_hist_row *r, void *ctx) {
    add_ctx *a = ctx;
    return d9f_hist_merge_add(a->m, a->loc, strlen(a->loc), a->worker, a->wall, r);
}

static void add_segment(d9f_hist_merge *m, int s) {
    char seg[32];
    snprintf(seg, sizeof seg, "r%016x", (unsigned)(s * 7919 + 1));
    CHECK(d9f_hist_merge_segment(m, "host-1", "boot-1", s < SEGMENTS / 2 ? "run-a" : "run-b", seg) == 0);
    for (int l = 0; l < LOCS; l++)
        for (int w = 0; w < WORKERS; w++) {
            add_ctx a = {m, k_locs[l], (uint64_t)w, groups[s][l][w].first_wall, 0};
            CHECK(d9f_hist_rows(&groups[s][l][w].h, add_row, &a) == 0);
        }
}

/* the merge's rows as a Parquet file in memory (*len bytes) */
static char *write_file(d9f_hist_merge *m, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    char err[256];
    const d9f_table_def *t = &d9f_tables[D9F_POLL_HIST];
    pq_writer *w = pq_writer_open(f, t->cols, t->ncols, &(pq_options){.row_group_rows = 1000}, err, sizeof err);
    CHECK(w != NULL);
    CHECK(d9f_hist_merge_write(m, w, err, sizeof err) == 0);
    CHECK(pq_writer_rows(w) > 0);
    CHECK(pq_writer_close(w, err, sizeof err) == 0);
    fclose(f);
    d9f_hist_merge_free(m);
    return buf;
}

int main(void) {
    make_histograms();
    size_t n_once, n_early, n_reversed;

    d9f_hist_merge *once = d9f_hist_merge_new();
    for (int s = 0; s < SEGMENTS; s++) add_segment(once, s);
    char *f_once = write_file(once, &n_once);

    d9f_hist_merge *early = d9f_hist_merge_new_at(7); /* summed each time its buffer is full */
    for (int s = 0; s < SEGMENTS; s++) add_segment(early, s);
    char *f_early = write_file(early, &n_early);

    d9f_hist_merge *reversed = d9f_hist_merge_new_at(100);
    for (int s = SEGMENTS; s-- > 0;) add_segment(reversed, s);
    char *f_reversed = write_file(reversed, &n_reversed);

    CHECK_EQ_U64(n_early, n_once);
    CHECK(n_early == n_once && memcmp(f_early, f_once, n_once) == 0);
    CHECK_EQ_U64(n_reversed, n_once);
    CHECK(n_reversed == n_once && memcmp(f_reversed, f_once, n_once) == 0);

    /* one run's segments summed = one histogram of all their polls, as one segment's rows */
    d9f_hist_merge *runs = d9f_hist_merge_new_at(5);
    for (int s = 0; s < SEGMENTS / 2; s++) add_segment(runs, s);
    size_t n_runs, n_whole;
    char *f_runs = write_file(runs, &n_runs);
    d9f_hist_merge *whole = d9f_hist_merge_new();
    /* the same identity but segment "": what a row summing several segments says */
    CHECK(d9f_hist_merge_segment(whole, "host-1", "boot-1", "run-a", "") == 0);
    for (int l = 0; l < LOCS; l++)
        for (int w = 0; w < WORKERS; w++) {
            d9a_hist all = {0};
            int64_t wall = INT64_MAX;
            uint64_t lo = UINT64_MAX, hi = 0;
            int nonempty = 0;
            for (int s = 0; s < SEGMENTS / 2; s++) {
                const d9a_hist *h = &groups[s][l][w].h;
                if (!h->count) continue;
                nonempty++;
                if (groups[s][l][w].first_wall < wall) wall = groups[s][l][w].first_wall;
                if (h->min < lo) lo = h->min;
                if (h->max > hi) hi = h->max;
                /* each poll again, at its bucket's low bound: the same buckets */
                for (uint32_t b = 0; b < h->nbuckets; b++)
                    for (uint64_t k = 0; k < h->buckets[b]; k++) d9a_hist_add(&all, d9a_hist_bucket_low(b));
            }
            CHECK(nonempty >= 2); /* every group here sums several segments */
            all.min = lo; /* the polls' exact extremes, as one histogram of them has */
            all.max = hi;
            add_ctx a = {whole, k_locs[l], (uint64_t)w, wall, 0};
            CHECK(d9f_hist_rows(&all, add_row, &a) == 0);
            d9a_hist_free(&all);
        }
    char *f_whole = write_file(whole, &n_whole);
    CHECK_EQ_U64(n_runs, n_whole);
    CHECK(n_runs == n_whole && memcmp(f_runs, f_whole, n_runs) == 0);

    free(f_once);
    free(f_early);
    free(f_reversed);
    free(f_runs);
    free(f_whole);
    for (int s = 0; s < SEGMENTS; s++)
        for (int l = 0; l < LOCS; l++)
            for (int w = 0; w < WORKERS; w++) d9a_hist_free(&groups[s][l][w].h);
    return d9t_summary("test_fold_hist_merge");
}
