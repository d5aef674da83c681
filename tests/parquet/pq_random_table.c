/* Writes a Parquet file of random columns with our writer and the same values as JSON lines,
 * for the round trip by two independent readers (roundtrip_random.test.mjs: hyparquet and
 * DuckDB). Every type, required and optional, dictionary and PLAIN, low and high cardinality
 * (dictionaries that overflow PQ_DICT_MAX mid row group), random row-group and page sizes, zstd
 * or not, values repeated with pq_put_same (across row groups too); half the seeds put their
 * rows column at a time instead (pq_begin_rows, pq_put_i64s, pq_put_str_ids, pq_put_same_n,
 * ...: batches of random sizes, never across a row group), and some INT64 columns are nearly
 * all 0 (as polls' attribution parts): all from the seed, so a failure is replayed by its
 * seed.
 *
 *     pq_random_table SEED ROWS OUT.parquet OUT.jsonl
 *
 * JSON: the first line is the schema ([{name, type, optional, dictionary}]), then one array per
 * row; 64-bit integers as decimal strings (JSON numbers lose them), null for a null. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parquet/pq_writer.h"

/* splitmix64, not the unit tests' xorshift64 (tests/test_rng.h): the tables every seed gives
 * are the ones it gave when it was tested, so a failure found by a seed replays. */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng;
static uint64_t next(void) { return splitmix64(&rng); }

/* A second stream for pq_put_same's choices, so the tables of a seed are what they were
 * before it was tested, values and all, apart from the repeats. */
static uint64_t rng_same;
static uint64_t next_same(void) { return splitmix64(&rng_same); }

/* A third stream for the batches (whether, how many rows, pq_put_same_n) and the nearly-zero
 * columns: the row-by-row seeds' tables stay what they were. */
static uint64_t rng_batch;
static uint64_t next_batch(void) { return splitmix64(&rng_batch); }

static const char *type_name[] = {"boolean", "int32", "int64", "double", "string", "timestamp_ns"};

typedef struct colspec {
    pq_column_def def;
    char name[32];
    uint64_t card;   /* distinct values drawn from (0: any) */
    bool wide;       /* with card: 1 in 8 values from 64, the rest from card (repeats early
                        enough that the dictionary never spills, many distinct in all) */
    unsigned nulls;  /* percent */
    unsigned same;   /* percent of rows put with pq_put_same (required columns) */
    uint64_t last;   /* the previous row's x */
    bool sparse;     /* INT64: 15 of 16 values 0 */
} colspec;

/* A column's value from its draw x (the same in both ways of putting rows). */
/* a drawn value within the column's cardinality */
static uint64_t in_card(const colspec *c, uint64_t x) {
    if (!c->card) return x;
    return c->wide && x % 8 == 0 ? x / 8 % 64 : x % c->card;
}

static int32_t value_i32(const colspec *c, uint64_t x) { return (int32_t)(uint32_t)(c->card ? x * 2654435761u : x); }
static int64_t value_i64(const colspec *c, uint64_t x) {
    if (c->def.type == PQ_TIMESTAMP_NS) return (int64_t)(x % 4000000000000000000ull);
    return (int64_t)(c->card ? x * 0x9e3779b97f4a7c15ull : x);
}
static double value_double(uint64_t x) { return (double)(int64_t)x / 1024.0; }
static int value_str(uint64_t x, char s[80]) {
    int n = snprintf(s, 80, "v%" PRIu64 "\"\\ é", x);
    return n > 0 ? (int)(x % 3 == 0 ? 0 : (size_t)n) : 0; /* empty strings too */
}

static void json_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* A batch's cell: null, or the draw x of its value. */
typedef struct cell {
    bool null;
    uint64_t x;
} cell;

static void json_cell(FILE *jf, const colspec *c, const cell *v) {
    if (v->null) {
        fputs("null", jf);
        return;
    }
    char s[80];
    switch (c->def.type) {
    case PQ_BOOLEAN: fputs(v->x & 1 ? "true" : "false", jf); break;
    case PQ_INT32: fprintf(jf, "%" PRId32, value_i32(c, v->x)); break;
    case PQ_INT64: case PQ_TIMESTAMP_NS: fprintf(jf, "\"%" PRId64 "\"", value_i64(c, v->x)); break;
    case PQ_DOUBLE: fprintf(jf, "%.17g", value_double(v->x)); break;
    case PQ_STRING: {
        int n = value_str(v->x, s);
        json_string(jf, s, (size_t)n);
        break;
    }
    }
}

/* Every row put column at a time: batches of 1..3000 rows (never past the row group), some
 * required columns' batches all the previous row's value (pq_put_same_n). 0, or -1 when the
 * writer failed. */
static int put_batches(pq_writer *w, colspec *cs, int ncols, uint64_t rows, FILE *jf) {
    enum { MAXB = 3000 }; /* past 2 040 rows: the writer counts a batch's nulls 8 rows a step, 255 steps at a time */
    cell *cells = malloc(sizeof(cell) * MAXB * (size_t)ncols);
    bool *same_n = calloc((size_t)ncols, sizeof *same_n);
    int64_t *i64 = malloc(MAXB * sizeof *i64);
    int32_t *i32 = malloc(MAXB * sizeof *i32);
    double *dbl = malloc(MAXB * sizeof *dbl);
    bool *bools = malloc(MAXB * sizeof *bools);
    uint8_t *present = malloc(MAXB);
    uint32_t *ids = malloc(MAXB * sizeof *ids), *lens = malloc(MAXB * sizeof *lens);
    char (*strs)[80] = malloc(MAXB * sizeof *strs);
    const char **sp = malloc(MAXB * sizeof *sp);
    if (!cells || !same_n || !i64 || !i32 || !dbl || !bools || !present || !ids || !lens || !strs || !sp) return -1;
    int rc = 0;
    for (uint64_t r = 0; r < rows && rc == 0;) {
        uint32_t k = 1 + (uint32_t)(next_batch() % MAXB), room = pq_rows_room(w);
        if (k > room) k = room;
        if (k > rows - r) k = (uint32_t)(rows - r);
        for (int i = 0; i < ncols; i++) /* the whole batch the previous row's value */
            same_n[i] = !cs[i].def.optional && r > 0 && next_batch() % 8 == 0;
        for (uint32_t q = 0; q < k; q++) { /* the draws of the row-by-row way */
            for (int i = 0; i < ncols; i++) {
                colspec *c = &cs[i];
                cell *v = &cells[(size_t)q * ncols + i];
                v->null = c->nulls && next() % 100 < c->nulls;
                if (v->null) continue;
                uint64_t x = next();
                x = in_card(c, x);
                if (c->sparse && next_batch() % 16 != 0) x = 0;
                if ((r + q > 0 && next_same() % 100 < c->same) || same_n[i]) x = c->last;
                c->last = x;
                v->x = x;
            }
        }
        for (uint32_t q = 0; q < k; q++) {
            fputc('[', jf);
            for (int i = 0; i < ncols; i++) {
                if (i) fputc(',', jf);
                json_cell(jf, &cs[i], &cells[(size_t)q * ncols + i]);
            }
            fputs("]\n", jf);
        }
        pq_begin_rows(w, k);
        for (int i = 0; i < ncols; i++) {
            colspec *c = &cs[i];
            if (same_n[i]) {
                pq_put_same_n(w, i);
                continue;
            }
            bool any_null = false;
            for (uint32_t q = 0; q < k; q++) {
                const cell *v = &cells[(size_t)q * ncols + i];
                present[q] = !v->null;
                any_null |= v->null;
                switch (c->def.type) {
                case PQ_BOOLEAN: bools[q] = v->x & 1; break;
                case PQ_INT32: i32[q] = value_i32(c, v->x); break;
                case PQ_INT64: case PQ_TIMESTAMP_NS: i64[q] = value_i64(c, v->x); break;
                case PQ_DOUBLE: dbl[q] = value_double(v->x); break;
                case PQ_STRING: { /* a string seen earlier in the batch: its id again */
                    lens[q] = (uint32_t)value_str(v->x, strs[q]);
                    sp[q] = strs[q];
                    ids[q] = q;
                    for (uint32_t e = 0; e < q; e++)
                        if (!cells[(size_t)e * ncols + i].null && cells[(size_t)e * ncols + i].x == v->x) {
                            ids[q] = e;
                            break;
                        }
                    break;
                }
                }
            }
            const uint8_t *pr = any_null || (c->def.optional && next_batch() % 2) ? present : NULL;
            switch (c->def.type) {
            case PQ_BOOLEAN: pq_put_bools(w, i, bools, pr); break;
            case PQ_INT32: pq_put_i32s(w, i, i32, pr); break;
            case PQ_INT64: case PQ_TIMESTAMP_NS: pq_put_i64s(w, i, i64, pr); break;
            case PQ_DOUBLE: pq_put_doubles(w, i, dbl, pr); break;
            case PQ_STRING: pq_put_str_ids(w, i, ids, pr, sp, lens, k); break;
            }
        }
        rc = pq_end_rows(w);
        r += k;
    }
    free(cells); free(same_n); free(i64); free(i32); free(dbl); free(bools); free(present);
    free(ids); free(lens); free(strs); free(sp);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: pq_random_table SEED ROWS OUT.parquet OUT.jsonl\n");
        return 2;
    }
    rng = strtoull(argv[1], NULL, 10);
    rng_same = rng ^ 0x5a5a5a5a5a5a5a5aull;
    rng_batch = rng ^ 0x3c3c3c3c3c3c3c3cull;
    bool batches = next_batch() % 2;
    uint64_t rows = strtoull(argv[2], NULL, 10);
    FILE *pf = fopen(argv[3], "wb"), *jf = fopen(argv[4], "w");
    if (!pf || !jf) {
        perror("open");
        return 1;
    }
    int ncols = 6 + (int)(next() % 10);
    colspec *cs = calloc((size_t)ncols, sizeof *cs);
    pq_column_def *defs = calloc((size_t)ncols, sizeof *defs);
    if (!cs || !defs) return 1;
    static const uint64_t cards[] = {1, 2, 7, 300, 70000, 0};
    for (int i = 0; i < ncols; i++) {
        colspec *c = &cs[i];
        c->def.type = (pq_type)(i < 6 ? i : (int)(next() % 6)); /* every type at least once */
        c->def.optional = next() % 2;
        c->def.dictionary = next() % 3 != 0;
        c->def.delta = next() % 2;
        c->def.zstd = (uint8_t)(i % PQ_ZSTD_MODES); /* by the index: the draws, so the tables of a seed, as before */
        c->card = cards[next() % 6];
        c->nulls = c->def.optional ? (unsigned)(next() % 4 == 0 ? 100 : next() % 60) : 0;
        c->same = c->def.optional ? 0 : (unsigned[]){0, 10, 60, 99}[next_same() % 4];
        c->sparse = c->def.type == PQ_INT64 && next_batch() % 3 == 0;
        snprintf(c->name, sizeof c->name, "c%d_%s", i, type_name[c->def.type]);
        c->def.name = c->name;
        defs[i] = c->def;
    }
    pq_options opt = {.row_group_rows = 1 + (uint32_t)(next() % 5000),
                      .page_rows = 1 + (uint32_t)(next() % 3000),
                      .uncompressed = next() % 4 == 0};
    if (rows >= 70000) { /* the big tables: one row group, a dictionary past 65 536 entries
                          * (column 2, INT64: ~60 k and ~75 k distinct of 80 k and 90 k rows),
                          * set after the draws, so that every other table is as before */
        opt.row_group_rows = (uint32_t)rows;
        cs[2].def.dictionary = true;
        cs[2].card = 1000000;
        cs[2].wide = true;
        cs[2].nulls = 0;
        cs[2].sparse = false;
        cs[2].same = 0;
        defs[2] = cs[2].def;
        cs[1].def.optional = false; /* and column 1 (INT32) one value throughout: the writer's */
        cs[1].def.dictionary = false; /* one-entry dictionary of a constant chunk */
        cs[1].card = 1;
        cs[1].nulls = 0;
        defs[1] = cs[1].def;
    }
    char err[256];
    pq_writer *w = pq_writer_open(pf, defs, ncols, &opt, err, sizeof err);
    if (!w) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    fputc('[', jf);
    for (int i = 0; i < ncols; i++)
        fprintf(jf, "%s{\"name\":\"%s\",\"type\":\"%s\",\"optional\":%s}", i ? "," : "", cs[i].name,
                type_name[cs[i].def.type], cs[i].def.optional ? "true" : "false");
    fputs("]\n", jf);
    if (batches) {
        int rc = put_batches(w, cs, ncols, rows, jf);
        if (rc != 0) rows = 0; /* the writer failed: close says why */
    }
    for (uint64_t r = 0; !batches && r < rows; r++) {
        fputc('[', jf);
        for (int i = 0; i < ncols; i++) {
            colspec *c = &cs[i];
            if (i) fputc(',', jf);
            if (c->nulls && next() % 100 < c->nulls) {
                pq_put_null(w, i);
                fputs("null", jf);
                continue;
            }
            uint64_t x = next();
            x = in_card(c, x);
            if (c->sparse && next_batch() % 16 != 0) x = 0;
            bool same = r > 0 && next_same() % 100 < c->same; /* the previous row's value again */
            if (same) x = c->last;
            c->last = x;
            switch (c->def.type) {
            case PQ_BOOLEAN: same ? pq_put_same(w, i) : pq_put_bool(w, i, x & 1); fputs(x & 1 ? "true" : "false", jf); break;
            case PQ_INT32: {
                int32_t v = (int32_t)(uint32_t)(c->card ? x * 2654435761u : x);
                same ? pq_put_same(w, i) : pq_put_i32(w, i, v);
                fprintf(jf, "%" PRId32, v);
                break;
            }
            case PQ_INT64: case PQ_TIMESTAMP_NS: {
                int64_t v = (int64_t)(c->card ? x * 0x9e3779b97f4a7c15ull : x);
                if (c->def.type == PQ_TIMESTAMP_NS) v = (int64_t)(x % 4000000000000000000ull);
                same ? pq_put_same(w, i) : pq_put_i64(w, i, v);
                fprintf(jf, "\"%" PRId64 "\"", v);
                break;
            }
            case PQ_DOUBLE: {
                double v = (double)(int64_t)x / 1024.0;
                same ? pq_put_same(w, i) : pq_put_double(w, i, v);
                fprintf(jf, "%.17g", v);
                break;
            }
            case PQ_STRING: {
                char s[80];
                int n = snprintf(s, sizeof s, "v%" PRIu64 "\"\\ é", x);
                n = n > 0 ? (int)(x % 3 == 0 ? 0 : (size_t)n) : 0; /* empty strings too */
                same ? pq_put_same(w, i) : pq_put_str(w, i, s, (size_t)n);
                json_string(jf, s, (size_t)n);
                break;
            }
            }
        }
        fputs("]\n", jf);
        if (pq_end_row(w) != 0) break;
    }
    if (pq_writer_close(w, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (fclose(pf) != 0 || fclose(jf) != 0) {
        perror("close");
        return 1;
    }
    free(cs);
    free(defs);
    return 0;
}
