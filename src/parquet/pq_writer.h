/* A Parquet file writer of our own (Debian 12 packages no Parquet library): flat schemas of
 * required and optional columns, physical types BOOLEAN, INT32, INT64, DOUBLE and BYTE_ARRAY,
 * logical types STRING and TIMESTAMP(NANOS, UTC); data pages v1 with PLAIN, RLE_DICTIONARY or
 * DELTA_BINARY_PACKED values and RLE definition levels; zstd pages through the dlopen'ed
 * libzstd, as each column needs it (pq_zstd.h; uncompressed when libzstd is absent, and a chunk
 * of one value throughout: a one-entry dictionary); column-chunk statistics (min, max, null
 * count) and TypeDefinedOrder so engines prune row groups.
 *
 * Streaming with bounded memory: values are appended row by row and a row group is encoded
 * and written every `row_group_rows` rows, so a writer holds at most one row group.
 *
 *     pq_writer *w = pq_writer_open(f, cols, ncols, NULL, err, sizeof err);
 *     for each row: pq_put_i64(w, 0, v); pq_put_str(w, 1, s, n); ... pq_end_row(w);
 *     pq_writer_close(w, err, sizeof err);   (f stays the caller's)
 *
 * Or column at a time, a batch of rows (at most pq_rows_room: a batch never crosses a row group):
 *
 *     pq_begin_rows(w, n);
 *     pq_put_i64s(w, 0, values, NULL); pq_put_str_ids(w, 1, ids, NULL, strs, lens, nstrs); ...
 *     pq_end_rows(w);
 *
 * each column one call with its n values, appended in one loop (no call, check or hash per
 * value where the column needs none).
 *
 * A put of the wrong type, a row missing a column or a failed write makes the writer fail:
 * every later call returns -1 and close says why; the file is then no Parquet file (the
 * caller removes it). */
#ifndef D9_PARQUET_PQ_WRITER_H
#define D9_PARQUET_PQ_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parquet/pq_zstd.h"

typedef enum pq_type {
    PQ_BOOLEAN,
    PQ_INT32,
    PQ_INT64,
    PQ_DOUBLE,
    PQ_STRING,       /* BYTE_ARRAY, logical STRING (UTF8) */
    PQ_TIMESTAMP_NS, /* INT64, logical TIMESTAMP(isAdjustedToUTC, NANOS) */
} pq_type;

typedef struct pq_column_def {
    const char *name;
    pq_type type;
    bool optional;   /* nullable: pq_put_null allowed */
    bool dictionary; /* RLE_DICTIONARY when a row group has at most PQ_DICT_MAX distinct values
                        and no more than 15 in 16 of its values are distinct (never for
                        BOOLEAN); an integer dictionary sorted by value, indexes wider than a
                        byte written in whole bytes under zstd */
    bool delta;      /* INT32, INT64, TIMESTAMP_NS: DELTA_BINARY_PACKED when not dictionary
                        encoded (sorted or slowly moving values, such as times) */
    uint8_t zstd;    /* pq_zstd_mode of its data pages (an integer dictionary page: FAST, as
                        its sorted values need matches; a string one: LEVEL); PLAIN integer
                        pages of a LEVEL column are FAST, its indexes of two bytes or more
                        FAST_WIDE; NONE: the whole chunk UNCOMPRESSED. DELTA widths are whole
                        bytes under LEVEL and FAST, near them under ENTROPY, exact under NONE;
                        a DELTA chunk of an ENTROPY or NONE column whose deltas repeat in a
                        pattern goes at the level (pq_writer.c, delta_mode) */
} pq_column_def;

/* Past 65 536 entries an index is 3 whole bytes under zstd: still a third of the PLAIN value
 * (a compacted busy hour's durations: 2.95 -> 2.45 bytes a poll); 16 Mi keeps it 3 bytes. */
#define PQ_DICT_MAX (1u << 24)

typedef struct pq_options {
    uint32_t row_group_rows; /* rows per row group (default 1 Mi) */
    uint32_t page_rows;      /* rows per data page (default 64 Ki) */
    int zstd_level;          /* default 3 */
    bool uncompressed;       /* no zstd even when libzstd is there */
} pq_options;

typedef struct pq_writer pq_writer;

/* Writes the magic at once. NULL with the reason in err on a bad schema or no memory. */
pq_writer *pq_writer_open(FILE *f, const pq_column_def *cols, int ncols, const pq_options *opt,
                          char *err, size_t errlen);
/* A footer key/value pair (copied). */
int pq_writer_add_kv(pq_writer *w, const char *key, const char *value);

int pq_put_bool(pq_writer *w, int col, bool v);
int pq_put_i32(pq_writer *w, int col, int32_t v);
int pq_put_i64(pq_writer *w, int col, int64_t v); /* INT64 and TIMESTAMP_NS columns */
int pq_put_double(pq_writer *w, int col, double v);
int pq_put_str(pq_writer *w, int col, const char *s, size_t n);
int pq_put_null(pq_writer *w, int col);
/* The previous row's value of a required column again (the previous row may be in the last
 * row group): no hashing or comparing, for columns that stay the same over many rows, such as
 * the fold's identity columns. Fails on an optional column or before the first row. */
int pq_put_same(pq_writer *w, int col);
/* Ends a row: every column must have had exactly one put. */
int pq_end_row(pq_writer *w);

/* Column at a time. Rows the current row group still takes (>= 1). */
uint32_t pq_rows_room(const pq_writer *w);
/* Begins a batch of n rows (1..pq_rows_room): then each column exactly one put below, then
 * pq_end_rows. No row's put (pq_put_i64, ...) inside a batch. */
int pq_begin_rows(pq_writer *w, uint32_t n);
/* v: the batch's n values; present: NULL (every row has a value) or n flags, 0 for a null
 * (whose v is ignored; optional columns only). */
int pq_put_i64s(pq_writer *w, int col, const int64_t *v, const uint8_t *present);
int pq_put_i32s(pq_writer *w, int col, const int32_t *v, const uint8_t *present);
int pq_put_doubles(pq_writer *w, int col, const double *v, const uint8_t *present);
int pq_put_bools(pq_writer *w, int col, const bool *v, const uint8_t *present);
/* Strings by the caller's ids: row r's is strs[ids[r]] of lens[ids[r]] bytes (ids < nstrs).
 * A dictionary column hashes each id's string once per call, not once per row. */
int pq_put_str_ids(pq_writer *w, int col, const uint32_t *ids, const uint8_t *present, const char *const *strs,
                   const uint32_t *lens, uint32_t nstrs);
/* The previous row's value (as pq_put_same) on all n rows of a required column. */
int pq_put_same_n(pq_writer *w, int col);
int pq_end_rows(pq_writer *w);

uint64_t pq_writer_rows(const pq_writer *w);
/* "zstd" or "none": the codec the pages are written with. */
const char *pq_writer_codec(const pq_writer *w);

/* Writes the last row group and the footer, then frees w (also on failure). 0 or -1 with err. */
int pq_writer_close(pq_writer *w, char *err, size_t errlen);
/* Frees w without writing anything more. */
void pq_writer_abort(pq_writer *w);

#endif
