/* Writes a Parquet file of random columns with our writer and the same values as JSON lines,
 * for the round trip by two independent readers (roundtrip_random.test.mjs: hyparquet and
 * DuckDB). Every type, required and optional, dictionary and PLAIN, low and high cardinality
 * (dictionaries that overflow PQ_DICT_MAX mid row group), random row-group and page sizes, zstd
 * or not, values repeated with pq_put_same (across row groups too): all from the seed, so a
 * failure is replayed by its seed.
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

static uint64_t rng;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A second stream for pq_put_same's choices, so the tables of a seed are what they were
 * before it was tested, values and all, apart from the repeats. */
static uint64_t rng_same;
static uint64_t next_same(void) {
    uint64_t z = (rng_same += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const char *type_name[] = {"boolean", "int32", "int64", "double", "string", "timestamp_ns"};

typedef struct colspec {
    pq_column_def def;
    char name[32];
    uint64_t card;   /* distinct values drawn from (0: any) */
    unsigned nulls;  /* percent */
    unsigned same;   /* percent of rows put with pq_put_same (required columns) */
    uint64_t last;   /* the previous row's x */
} colspec;

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

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: pq_random_table SEED ROWS OUT.parquet OUT.jsonl\n");
        return 2;
    }
    rng = strtoull(argv[1], NULL, 10);
    rng_same = rng ^ 0x5a5a5a5a5a5a5a5aull;
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
        c->card = cards[next() % 6];
        c->nulls = c->def.optional ? (unsigned)(next() % 4 == 0 ? 100 : next() % 60) : 0;
        c->same = c->def.optional ? 0 : (unsigned[]){0, 10, 60, 99}[next_same() % 4];
        snprintf(c->name, sizeof c->name, "c%d_%s", i, type_name[c->def.type]);
        c->def.name = c->name;
        defs[i] = c->def;
    }
    pq_options opt = {.row_group_rows = 1 + (uint32_t)(next() % 5000),
                      .page_rows = 1 + (uint32_t)(next() % 3000),
                      .uncompressed = next() % 4 == 0};
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
    for (uint64_t r = 0; r < rows; r++) {
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
            if (c->card) x %= c->card;
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
