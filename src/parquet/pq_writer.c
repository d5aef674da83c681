/* Parquet writer (see pq_writer.h). Layout: "PAR1", per row group and column one column chunk
 * (an optional dictionary page, then data pages v1), then FileMetaData in the Thrift compact
 * protocol, its length (4 bytes LE) and "PAR1". Field ids are parquet-format's
 * (parquet.thrift). */
#include "parquet/pq_writer.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/libzstd_loader.h"
#include "parquet/copy_minmax.h"
#include "parquet/delta_binary_packed.h"
#include "parquet/dict_order.h"
#include "parquet/pq_buf.h"
#include "parquet/rle_hybrid.h"
#include "parquet/thrift_compact.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "PLAIN values are copied as they lie in memory");

/* parquet.thrift enums */
enum { T_BOOLEAN = 0, T_INT32 = 1, T_INT64 = 2, T_DOUBLE = 5, T_BYTE_ARRAY = 6 };
enum { E_PLAIN = 0, E_RLE = 3, E_DELTA_BINARY_PACKED = 5, E_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { CODEC_UNCOMPRESSED = 0, CODEC_ZSTD = 6 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1 };
enum { CONVERTED_UTF8 = 0 };

typedef struct chunk_meta {
    int64_t uncompressed, compressed, data_page_offset, dict_page_offset, num_values, nulls;
    bool dict, delta, has_minmax;
    bool raw;               /* UNCOMPRESSED although the writer's pages are zstd (a codec per chunk) */
    uint8_t min[8], max[8]; /* fixed-width statistics */
    char *smin, *smax;      /* string statistics (malloc) */
    uint32_t smin_len, smax_len;
} chunk_meta;

typedef struct row_group_meta {
    int64_t rows, file_offset, total_uncompressed, total_compressed;
    chunk_meta *chunks;
} row_group_meta;

typedef struct column {
    pq_column_def def;
    char *name;
    pq_buf values;     /* PLAIN bytes of the non-null values (booleans: one byte each) */
    uint32_t *offsets; /* strings: start of each stored item's length prefix in `values` */
    size_t nvalues;    /* non-null values of the row group */
    size_t nstored;    /* items in `values`: dictionary entries, or (PLAIN) nvalues */
    size_t offsets_cap, index_cap;
    uint8_t *defs;     /* optional columns: definition level of each row */
    int64_t nulls;
    uint32_t puts;     /* puts in the current row: must be 1 at pq_end_row */
    /* Dictionary columns: a string's entry is looked up as it is put, until a row group has
     * more than PQ_DICT_MAX distinct values or nearly all its values are distinct (then
     * spilled: the row group's values are made PLAIN in `values`); a fixed-width column's
     * values are put PLAIN and its dictionary built at the row group's end (dict_order.h),
     * when it pays. In dict_mode the dictionary's entries are `values` (PLAIN, `offsets` for
     * strings) and each value is an index. */
    bool dict_mode;
    uint32_t *index;    /* per value */
    uint32_t *slots;    /* strings: open addressing, entry + 1, 0 empty */
    uint32_t nslots, ndict;
    pq_buf carry;      /* required columns: the last value of the previous row group, for
                          pq_put_same on a row group's first row */
    bool have_minmax;  /* fixed-width min/max so far */
    union {
        int64_t i;
        double d;
    } min, max;
} column;

struct pq_writer {
    FILE *f;
    pq_options opt;
    int ncols;
    column *cols;
    uint64_t rows_total;
    uint32_t rows; /* in the current row group */
    int64_t offset;
    row_group_meta *groups;
    size_t ngroups;
    char **kv;
    size_t nkv;
    bool zstd;      /* pages compressed (z) */
    pq_zstd z;
    pq_buf page, levels, cbuf, hbuf;
    uint32_t batch;        /* rows of the batch begun (pq_begin_rows), 0: row by row */
    uint32_t *id_index;    /* pq_put_str_ids: dictionary index + 1 of each caller's id */
    size_t id_index_cap;
    pq_dict_order order;   /* integer dictionaries sorted before they are written */
    bool failed;
    char err[256];
};


static int fail(pq_writer *w, const char *fmt, ...) {
    if (!w->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof w->err, fmt, ap);
        va_end(ap);
        w->failed = true;
    }
    return -1;
}

static uint8_t physical(pq_type t) {
    switch (t) {
    case PQ_BOOLEAN: return T_BOOLEAN;
    case PQ_INT32: return T_INT32;
    case PQ_INT64: case PQ_TIMESTAMP_NS: return T_INT64;
    case PQ_DOUBLE: return T_DOUBLE;
    case PQ_STRING: return T_BYTE_ARRAY;
    }
    return T_INT64;
}

static size_t width(pq_type t) {
    switch (t) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32: return 4;
    case PQ_STRING: return 0;
    default: return 8;
    }
}

/* A column whose dictionary is looked up as values are put (strings); a fixed-width one's is
 * built at the row group's end from its PLAIN values (dict_order.h). */
static bool hashed_dictionary(const pq_column_def *d) { return d->dictionary && d->type == PQ_STRING; }

static int write_bytes(pq_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->f) != n) return fail(w, "write failed");
    w->offset += (int64_t)n;
    return 0;
}

pq_writer *pq_writer_open(FILE *f, const pq_column_def *cols, int ncols, const pq_options *opt,
                          char *err, size_t errlen) {
    if (ncols <= 0 || ncols > 4096) {
        snprintf(err, errlen, "parquet: %d columns", ncols);
        return NULL;
    }
    pq_writer *w = calloc(1, sizeof *w);
    if (!w) goto oom;
    w->f = f;
    w->opt = opt ? *opt : (pq_options){0};
    if (!w->opt.row_group_rows) w->opt.row_group_rows = 1u << 20;
    if (!w->opt.page_rows) w->opt.page_rows = 1u << 16;
    if (!w->opt.zstd_level) w->opt.zstd_level = 3;
    w->ncols = ncols;
    w->cols = calloc((size_t)ncols, sizeof *w->cols);
    if (!w->cols) goto oom;
    for (int i = 0; i < ncols; i++) {
        column *c = &w->cols[i];
        c->def = cols[i];
        if (!cols[i].name || !cols[i].name[0] || cols[i].type > PQ_TIMESTAMP_NS) {
            snprintf(err, errlen, "parquet: column %d has no name or a bad type", i);
            pq_writer_abort(w);
            return NULL;
        }
        c->name = strdup(cols[i].name);
        if (!c->name) goto oom;
        c->def.name = c->name;
        if (c->def.optional) {
            c->defs = malloc(w->opt.row_group_rows);
            if (!c->defs) goto oom;
        }
        /* a dictionary of booleans saves nothing, and readers take it for RLE booleans */
        if (c->def.type == PQ_BOOLEAN) c->def.dictionary = false;
        c->dict_mode = hashed_dictionary(&c->def);
    }
    if (!w->opt.uncompressed) w->zstd = pq_zstd_init(&w->z, w->opt.zstd_level) == 0;
    if (write_bytes(w, "PAR1", 4) != 0) {
        snprintf(err, errlen, "parquet: %s", w->err);
        pq_writer_abort(w);
        return NULL;
    }
    return w;
oom:
    snprintf(err, errlen, "parquet: out of memory");
    pq_writer_abort(w);
    return NULL;
}

int pq_writer_add_kv(pq_writer *w, const char *key, const char *value) {
    char **p = realloc(w->kv, (w->nkv + 2) * sizeof *p);
    if (!p) return fail(w, "out of memory");
    w->kv = p;
    p[w->nkv] = strdup(key);
    p[w->nkv + 1] = strdup(value);
    w->nkv += 2;
    if (!p[w->nkv - 2] || !p[w->nkv - 1]) return fail(w, "out of memory");
    return 0;
}

uint64_t pq_writer_rows(const pq_writer *w) { return w->rows_total; }
const char *pq_writer_codec(const pq_writer *w) { return w->zstd ? "zstd" : "none"; }

/* Why a put is refused (out of line: the checks of every put stay a few instructions). */
static __attribute__((noinline)) column *put_refused(pq_writer *w, int col, pq_type t1, pq_type t2) {
    if (w->failed) return NULL;
    if (w->batch) {
        fail(w, "a row's put inside a batch of rows");
    } else if (col < 0 || col >= w->ncols) {
        fail(w, "no column %d", col);
    } else if (w->cols[col].def.type != t1 && w->cols[col].def.type != t2) {
        fail(w, "column %s: a value of the wrong type", w->cols[col].name);
    } else {
        fail(w, "column %s: two values in one row", w->cols[col].name);
    }
    return NULL;
}

/* The column a put of type t1 or t2 goes to, counted as put; NULL when refused. Inlined into
 * each put (a call per value was 2 % of dial9 fold's instructions). */
static inline __attribute__((always_inline)) column *col_for(pq_writer *w, int col, pq_type t1, pq_type t2) {
    if (w->failed || w->batch || col < 0 || col >= w->ncols) return put_refused(w, col, t1, t2);
    column *c = &w->cols[col];
    if ((c->def.type != t1 && c->def.type != t2) || c->puts) return put_refused(w, col, t1, t2);
    c->puts = 1;
    if (c->def.optional) c->defs[w->rows] = 1;
    return c;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        h = (h ^ x) * 0x100000001b3ull;
        h ^= h >> 32;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* Stored item i of `values` (a dictionary entry, or a PLAIN value): its bytes without the
 * length prefix of strings. */
static void item_at(const column *c, size_t i, const uint8_t **p, size_t *n) {
    if (c->def.type == PQ_STRING) {
        uint32_t len;
        memcpy(&len, c->values.p + c->offsets[i], 4);
        *p = c->values.p + c->offsets[i] + 4;
        *n = len;
    } else {
        size_t wdt = width(c->def.type);
        *p = c->values.p + i * wdt;
        *n = wdt;
    }
}

static inline __attribute__((always_inline)) int append_item(pq_writer *w, column *c, const void *p, size_t n) {
    if (c->def.type == PQ_STRING) {
        if (c->nstored >= c->offsets_cap) {
            size_t cap = c->offsets_cap ? c->offsets_cap * 2 : 1024;
            uint32_t *o = pq_grow(c->offsets, c->offsets_cap * sizeof *o, cap * sizeof *o);
            if (!o) return fail(w, "out of memory");
            c->offsets = o;
            c->offsets_cap = cap;
        }
        if (c->values.len > UINT32_MAX - n - 4) return fail(w, "column %s: a row group over 4 GiB", c->name);
        c->offsets[c->nstored] = (uint32_t)c->values.len;
        pq_buf_le32(&c->values, (uint32_t)n);
    }
    pq_buf_put(&c->values, p, n);
    c->nstored++;
    return c->values.oom ? fail(w, "out of memory") : 0;
}

/* The row group's values so far as PLAIN items: the dictionary has too many entries. */
static int spill_dictionary(pq_writer *w, column *c) {
    column old = *c;
    c->values = (pq_buf){0};
    c->offsets = NULL;
    c->offsets_cap = 0;
    c->nstored = 0;
    c->dict_mode = false;
    int rc = 0;
    for (size_t k = 0; k < c->nvalues && rc == 0; k++) {
        const uint8_t *p;
        size_t n;
        item_at(&old, old.index[k], &p, &n);
        rc = append_item(w, c, p, n);
    }
    pq_buf_free(&old.values);
    pq_grown_free(old.offsets, old.offsets_cap * sizeof *old.offsets);
    return rc;
}

/* Room in a dictionary column's indexes for `need` values. */
static __attribute__((noinline)) int reserve_index(pq_writer *w, column *c, size_t need) {
    if (need <= c->index_cap) return 0;
    size_t cap = c->index_cap ? c->index_cap : 1024;
    while (cap < need) cap *= 2;
    uint32_t *x = pq_grow(c->index, c->index_cap * sizeof *x, cap * sizeof *x);
    if (!x) return fail(w, "out of memory");
    c->index = x;
    c->index_cap = cap;
    return 0;
}

static int grow_slots(pq_writer *w, column *c) {
    uint32_t n = c->nslots ? c->nslots * 2 : 1024;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s) return fail(w, "out of memory");
    for (uint32_t e = 0; e < c->ndict; e++) {
        const uint8_t *p;
        size_t len;
        item_at(c, e, &p, &len);
        uint32_t k = (uint32_t)hash_bytes(p, len) & (n - 1);
        while (s[k]) k = (k + 1) & (n - 1);
        s[k] = e + 1;
    }
    free(c->slots);
    c->slots = s;
    c->nslots = n;
    return 0;
}

/* More than 15 in 16 of the values so far are distinct: their dictionary saves next to
 * nothing, so the row group goes PLAIN (a string column past 8 Ki entries, where each costs a
 * hash and a probe, or at the row group's end). A sorted one pays below that: sched's
 * parked_ns, 77 % distinct, 10 % smaller. */
static inline bool nearly_all_distinct(const column *c) { return (uint64_t)c->ndict * 16 > (uint64_t)c->nvalues * 15; }

/* One non-null value: its index in the dictionary (a string's, added when new), or its PLAIN
 * bytes. Inlined into each put, where n is a constant for fixed-width types: the copies become
 * moves (a call to memcpy per value was a quarter of dial9 fold's time). */
static inline __attribute__((always_inline)) int store(pq_writer *w, column *c, const void *p, size_t n) {
    if (c->dict_mode) {
        if (c->nvalues >= c->index_cap && reserve_index(w, c, c->nvalues + 1) != 0) return -1;
        if (c->nvalues) { /* the previous value again (identity columns, runs): no hashing */
            const uint8_t *q;
            size_t qn;
            uint32_t e = c->index[c->nvalues - 1];
            item_at(c, e, &q, &qn);
            if (qn == n && memcmp(p, q, n) == 0) {
                c->index[c->nvalues++] = e;
                return 0;
            }
        }
        if ((c->ndict + 1) * 2 > c->nslots && grow_slots(w, c) != 0) return -1;
        uint32_t k = (uint32_t)hash_bytes(p, n) & (c->nslots - 1);
        for (;; k = (k + 1) & (c->nslots - 1)) {
            uint32_t e = c->slots[k];
            if (!e) break;
            const uint8_t *q;
            size_t qn;
            item_at(c, e - 1, &q, &qn);
            if (qn == n && memcmp(p, q, n) == 0) {
                c->index[c->nvalues++] = e - 1;
                return 0;
            }
        }
        if (c->ndict < PQ_DICT_MAX && !(c->ndict >= 8192 && nearly_all_distinct(c))) {
            if (append_item(w, c, p, n) != 0) return -1;
            c->slots[k] = ++c->ndict;
            c->index[c->nvalues++] = c->ndict - 1;
            return 0;
        }
        if (spill_dictionary(w, c) != 0) return -1;
    }
    if (append_item(w, c, p, n) != 0) return -1;
    c->nvalues++;
    return 0;
}

#define NOTE_MINMAX(c, field, v)                                                                \
    do {                                                                                        \
        if (!(c)->have_minmax) {                                                                \
            (c)->min.field = (c)->max.field = (v);                                              \
            (c)->have_minmax = true;                                                            \
        } else if ((v) < (c)->min.field) {                                                      \
            (c)->min.field = (v);                                                               \
        } else if ((v) > (c)->max.field) {                                                      \
            (c)->max.field = (v);                                                               \
        }                                                                                       \
    } while (0)

int pq_put_bool(pq_writer *w, int col, bool v) {
    column *c = col_for(w, col, PQ_BOOLEAN, PQ_BOOLEAN);
    if (!c) return -1;
    uint8_t b = v;
    NOTE_MINMAX(c, i, (int64_t)v);
    return store(w, c, &b, 1);
}

int pq_put_i32(pq_writer *w, int col, int32_t v) {
    column *c = col_for(w, col, PQ_INT32, PQ_INT32);
    if (!c) return -1;
    NOTE_MINMAX(c, i, (int64_t)v);
    return store(w, c, &v, 4);
}

int pq_put_i64(pq_writer *w, int col, int64_t v) {
    column *c = col_for(w, col, PQ_INT64, PQ_TIMESTAMP_NS);
    if (!c) return -1;
    NOTE_MINMAX(c, i, v);
    return store(w, c, &v, 8);
}

int pq_put_double(pq_writer *w, int col, double v) {
    column *c = col_for(w, col, PQ_DOUBLE, PQ_DOUBLE);
    if (!c) return -1;
    if (v == v) NOTE_MINMAX(c, d, v); /* NaN orders nowhere: left out of the statistics */
    return store(w, c, &v, 8);
}

int pq_put_str(pq_writer *w, int col, const char *s, size_t n) {
    if (n > UINT32_MAX / 2) return fail(w, "a string of %zu bytes", n);
    column *c = col_for(w, col, PQ_STRING, PQ_STRING);
    if (!c) return -1;
    return store(w, c, s, n);
}

int pq_put_null(pq_writer *w, int col) {
    if (w->failed) return -1;
    if (w->batch) return fail(w, "a row's put inside a batch of rows");
    if (col < 0 || col >= w->ncols) return fail(w, "no column %d", col);
    column *c = &w->cols[col];
    if (!c->def.optional) return fail(w, "column %s is required: no null", c->name);
    if (c->puts++) return fail(w, "column %s: two values in one row", c->name);
    c->defs[w->rows] = 0;
    c->nulls++;
    return 0;
}

/* pq_put_same on a row group's first row: the value carried over from the previous one,
 * stored as a new put would store it. */
static __attribute__((noinline)) int put_carried(pq_writer *w, column *c) {
    const uint8_t *p = c->carry.p;
    size_t n = c->carry.len;
    switch (c->def.type) {
    case PQ_BOOLEAN: NOTE_MINMAX(c, i, (int64_t)p[0]); break;
    case PQ_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        NOTE_MINMAX(c, i, (int64_t)v);
        break;
    }
    case PQ_DOUBLE: {
        double v;
        memcpy(&v, p, 8);
        if (v == v) NOTE_MINMAX(c, d, v);
        break;
    }
    case PQ_STRING: break;
    default: {
        int64_t v;
        memcpy(&v, p, 8);
        NOTE_MINMAX(c, i, v);
        break;
    }
    }
    return store(w, c, p, n);
}

/* pq_put_same in a PLAIN column: its last item copied (room made first: the source lies in
 * the buffer it is appended to). */
static __attribute__((noinline)) int put_last_plain(pq_writer *w, column *c) {
    const uint8_t *p;
    size_t n;
    item_at(c, c->nstored - 1, &p, &n);
    if (!pq_buf_reserve(&c->values, n + 4)) return fail(w, "out of memory");
    item_at(c, c->nstored - 1, &p, &n);
    if (append_item(w, c, p, n) != 0) return -1;
    c->nvalues++;
    return 0;
}

static __attribute__((noinline)) int same_refused(pq_writer *w, int col) {
    if (w->batch) return fail(w, "a row's put inside a batch of rows");
    if (col < 0 || col >= w->ncols) return fail(w, "no column %d", col);
    column *c = &w->cols[col];
    if (c->def.optional) return fail(w, "column %s: pq_put_same is for required columns", c->name);
    if (!w->rows_total) return fail(w, "column %s: pq_put_same without a previous row", c->name);
    return fail(w, "column %s: two values in one row", c->name);
}

/* The previous row's value again. A leaf for its common case (a dictionary index copied):
 * everything else is out of line, so it saves no registers (52 instructions a call before). */
int pq_put_same(pq_writer *w, int col) {
    if (w->failed) return -1;
    if (w->batch || col < 0 || col >= w->ncols || w->cols[col].def.optional || !w->rows_total || w->cols[col].puts)
        return same_refused(w, col);
    column *c = &w->cols[col];
    c->puts = 1;
    if (!c->nvalues) return put_carried(w, c);
    if (!c->dict_mode) return put_last_plain(w, c);
    if (c->nvalues >= c->index_cap && reserve_index(w, c, c->nvalues + 1) != 0) return -1;
    c->index[c->nvalues] = c->index[c->nvalues - 1];
    c->nvalues++;
    return 0;
}

/* A required column's last value, kept for pq_put_same across the row group's end. */
static int carry_last(pq_writer *w, column *c) {
    if (c->def.optional || !c->nvalues) return 0;
    const uint8_t *p;
    size_t n;
    item_at(c, c->dict_mode ? c->index[c->nvalues - 1] : c->nstored - 1, &p, &n);
    c->carry.len = 0;
    pq_buf_put(&c->carry, p, n);
    return c->carry.oom ? fail(w, "out of memory") : 0;
}

/* ---- a batch of rows, column at a time ---- */

uint32_t pq_rows_room(const pq_writer *w) { return w->opt.row_group_rows - w->rows; }

int pq_begin_rows(pq_writer *w, uint32_t n) {
    if (w->failed) return -1;
    if (w->batch) return fail(w, "a batch of rows begun inside another");
    for (int i = 0; i < w->ncols; i++)
        if (w->cols[i].puts) return fail(w, "a batch of rows begun inside a row");
    if (n == 0 || n > pq_rows_room(w)) return fail(w, "a batch of %u rows where %u fit", n, pq_rows_room(w));
    w->batch = n;
    return 0;
}

/* The column a batch's put of type t1 or t2 goes to, counted as put; NULL when refused. */
static column *batch_col(pq_writer *w, int col, pq_type t1, pq_type t2) {
    if (w->failed) return NULL;
    if (!w->batch) {
        fail(w, "a batch's put without pq_begin_rows");
        return NULL;
    }
    if (col < 0 || col >= w->ncols) {
        fail(w, "no column %d", col);
        return NULL;
    }
    column *c = &w->cols[col];
    if (c->def.type != t1 && c->def.type != t2) {
        fail(w, "column %s: values of the wrong type", c->name);
        return NULL;
    }
    if (c->puts) {
        fail(w, "column %s: two puts in one batch", c->name);
        return NULL;
    }
    c->puts = 1;
    return c;
}

/* Definition levels of the batch's rows: present[r] (NULL: every row). A required column
 * takes no null. */
static int batch_defs(pq_writer *w, column *c, const uint8_t *present) {
    if (!c->def.optional) {
        if (!present) return 0;
        for (uint32_t r = 0; r < w->batch; r++)
            if (!present[r]) return fail(w, "column %s is required: no null", c->name);
        return 0;
    }
    uint8_t *d = c->defs + w->rows;
    uint32_t n = w->batch, r = 0;
    if (!present) {
        memset(d, 1, n);
        return 0;
    }
    /* 8 levels a step: each byte 1 when its presence byte is nonzero (the sum of its low 7
     * bits and 0x7f carries into bit 7 unless they are 0; or'ed with bit 7 itself), summed
     * bytewise for up to 255 steps: ~2 instructions a row where a byte at a time cost ~5 */
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7full, ones = 0x0101010101010101ull;
    const uint64_t even = 0x00ff00ff00ff00ffull;
    uint64_t present_rows = 0;
    while (r + 8 <= n) {
        uint64_t bytes = 0; /* per byte, the rows present in its lane: at most 255 */
        for (int step = 0; step < 255 && r + 8 <= n; step++, r += 8) {
            uint64_t p;
            memcpy(&p, present + r, 8);
            uint64_t levels = ((((p & low7) + low7) | p) >> 7) & ones;
            memcpy(d + r, &levels, 8);
            bytes += levels;
        }
        uint64_t pairs = (bytes & even) + (bytes >> 8 & even); /* 4 lanes of 16 bits */
        present_rows += pairs * 0x0001000100010001ull >> 48;
    }
    for (; r < n; r++) {
        d[r] = present[r] != 0;
        present_rows += d[r];
    }
    c->nulls += n - present_rows;
    return 0;
}

/* NOTE_MINMAX over a batch, with the bounds in locals: stored through c each value, they were
 * reloaded each value too (v may alias them, as far as the compiler knows), and the loop was
 * ~10 instructions a value; in locals it is a compare and a conditional move each way. The
 * same strict compares as NOTE_MINMAX, so an equal value (0.0 and -0.0) never replaces a
 * bound: the statistics are the same bytes. */
#define BATCH_MINMAX(c, field, v, n, present, ordered)                                          \
    do {                                                                                        \
        uint32_t r_ = 0;                                                                        \
        if (!(c)->have_minmax) {                                                                \
            while (r_ < (n) && (((present) && !(present)[r_]) || !ordered((v)[r_]))) r_++;      \
            if (r_ == (n)) break;                                                               \
            (c)->min.field = (c)->max.field = (v)[r_++];                                        \
            (c)->have_minmax = true;                                                            \
        }                                                                                       \
        __typeof__((c)->min.field) lo_ = (c)->min.field, hi_ = (c)->max.field;                  \
        if (!(present)) {                                                                       \
            for (; r_ < (n); r_++) {                                                            \
                __typeof__((c)->min.field) x_ = (v)[r_];                                        \
                if (!ordered(x_)) continue;                                                     \
                lo_ = x_ < lo_ ? x_ : lo_;                                                      \
                hi_ = x_ > hi_ ? x_ : hi_;                                                      \
            }                                                                                   \
        } else {                                                                                \
            for (; r_ < (n); r_++) {                                                            \
                __typeof__((c)->min.field) x_ = (v)[r_];                                        \
                if (!(present)[r_] || !ordered(x_)) continue;                                   \
                lo_ = x_ < lo_ ? x_ : lo_;                                                      \
                hi_ = x_ > hi_ ? x_ : hi_;                                                      \
            }                                                                                   \
        }                                                                                       \
        (c)->min.field = lo_;                                                                   \
        (c)->max.field = hi_;                                                                   \
    } while (0)

/* A fixed-width batch put: min/max over the batch, then the values appended in one copy, the
 * present ones packed when some are null (a dictionary column's too: its dictionary is built
 * at the row group's end). */
#define PUT_FIXED_N(fn, T, t1, t2, field, ordered, copy_all)                                    \
    int fn(pq_writer *w, int col, const T *v, const uint8_t *present) {                         \
        column *c = batch_col(w, col, t1, t2);                                                  \
        if (!c || batch_defs(w, c, present) != 0) return -1;                                    \
        uint32_t n = w->batch;                                                                  \
        if (!pq_buf_reserve(&c->values, (size_t)n * sizeof(T))) return fail(w, "out of memory"); \
        uint32_t k = n;                                                                         \
        if (!present && copy_all(c, v, n)) {                                                    \
            c->values.len += (size_t)n * sizeof(T);                                             \
            c->nstored += n;                                                                    \
            c->nvalues += n;                                                                    \
            return 0;                                                                           \
        }                                                                                       \
        BATCH_MINMAX(c, field, v, n, present, ordered);                                         \
        if (!present) {                                                                         \
            memcpy(c->values.p + c->values.len, v, (size_t)n * sizeof(T));                      \
        } else { /* one reserve for the batch and the count in a local */                       \
            uint8_t *to = c->values.p + c->values.len;                                          \
            k = 0;                                                                              \
            for (uint32_t r = 0; r < n; r++) {                                                  \
                if (!present[r]) continue;                                                      \
                memcpy(to + (size_t)k * sizeof(T), &v[r], sizeof(T));                          \
                k++;                                                                            \
            }                                                                                   \
        }                                                                                       \
        c->values.len += (size_t)k * sizeof(T);                                                 \
        c->nstored += k;                                                                        \
        c->nvalues += k;                                                                        \
        return 0;                                                                               \
    }

/* Every row's INT64 value into the reserved room with the statistics, in one pass (the
 * column's most common put: copy_minmax.h). */
static inline bool copy_all_i64(column *c, const int64_t *v, uint32_t n) {
    if (!c->have_minmax) {
        c->min.i = c->max.i = v[0];
        c->have_minmax = true;
    }
    pq_copy_minmax_i64((int64_t *)(void *)(c->values.p + c->values.len), v, n, &c->min.i, &c->max.i);
    return true;
}
#define NO_COPY_ALL(c, v, n) ((void)(c), (void)(v), (void)(n), false)

#define ALWAYS(x) ((void)(x), 1)
#define NOT_NAN(x) ((x) == (x))
PUT_FIXED_N(pq_put_i64s, int64_t, PQ_INT64, PQ_TIMESTAMP_NS, i, ALWAYS, copy_all_i64)
PUT_FIXED_N(pq_put_i32s, int32_t, PQ_INT32, PQ_INT32, i, ALWAYS, NO_COPY_ALL)
PUT_FIXED_N(pq_put_doubles, double, PQ_DOUBLE, PQ_DOUBLE, d, NOT_NAN, NO_COPY_ALL)

int pq_put_bools(pq_writer *w, int col, const bool *v, const uint8_t *present) {
    column *c = batch_col(w, col, PQ_BOOLEAN, PQ_BOOLEAN);
    if (!c || batch_defs(w, c, present) != 0) return -1;
    for (uint32_t r = 0; r < w->batch; r++) {
        if (present && !present[r]) continue;
        uint8_t b = v[r];
        NOTE_MINMAX(c, i, (int64_t)b);
        if (store(w, c, &b, 1) != 0) return -1;
    }
    return 0;
}

int pq_put_str_ids(pq_writer *w, int col, const uint32_t *ids, const uint8_t *present, const char *const *strs,
                   const uint32_t *lens, uint32_t nstrs) {
    column *c = batch_col(w, col, PQ_STRING, PQ_STRING);
    if (!c || batch_defs(w, c, present) != 0) return -1;
    if (nstrs > w->id_index_cap) {
        uint32_t *x = realloc(w->id_index, (size_t)nstrs * sizeof *x);
        if (!x) return fail(w, "out of memory");
        w->id_index = x;
        w->id_index_cap = nstrs;
    }
    if (nstrs) memset(w->id_index, 0, (size_t)nstrs * sizeof *w->id_index);
    /* room for the batch's entries reserved once, and the count in a local: no capacity
     * check and no reload of the count per row (the column's put: 32 -> 25 a row) */
    if (c->dict_mode && reserve_index(w, c, c->nvalues + w->batch) != 0) return -1;
    const uint32_t *known = w->id_index;
    uint32_t *index = c->index;
    size_t nv = c->nvalues;
    for (uint32_t r = 0; r < w->batch; r++) {
        if (present && !present[r]) continue;
        uint32_t id = ids[r];
        if (id >= nstrs) {
            c->nvalues = nv;
            return fail(w, "column %s: string id %u of %u", c->name, id, nstrs);
        }
        if (known[id] && c->dict_mode) { /* this id's entry, found before: no hashing */
            index[nv++] = known[id] - 1;
            continue;
        }
        c->nvalues = nv;
        if (lens[id] > UINT32_MAX / 2) return fail(w, "a string of %u bytes", lens[id]);
        if (store(w, c, strs[id], lens[id]) != 0) return -1;
        if (c->dict_mode) w->id_index[id] = c->index[c->nvalues - 1] + 1;
        index = c->index;
        nv = c->nvalues;
    }
    c->nvalues = nv;
    return 0;
}

/* m copies of e from to[0]: 8 by stores, then by doubling copies (memcpy's vector stores),
 * ~0.3 instructions a value where a store each cost ~4 */
static void fill_u32(uint32_t *to, uint32_t e, size_t m) {
    size_t done = m < 8 ? m : 8;
    for (size_t k = 0; k < done; k++) to[k] = e;
    while (done < m) {
        size_t n = done < m - done ? done : m - done;
        memcpy(to + done, to, n * sizeof *to);
        done += n;
    }
}

int pq_put_same_n(pq_writer *w, int col) {
    if (w->failed) return -1;
    if (!w->batch) return fail(w, "a batch's put without pq_begin_rows");
    if (col < 0 || col >= w->ncols) return fail(w, "no column %d", col);
    column *c = &w->cols[col];
    if (c->def.optional) return fail(w, "column %s: pq_put_same_n is for required columns", c->name);
    if (!w->rows_total) return fail(w, "column %s: pq_put_same_n without a previous row", c->name);
    if (c->puts) return fail(w, "column %s: two puts in one batch", c->name);
    c->puts = 1;
    uint32_t r = 0;
    if (!c->nvalues) {
        if (put_carried(w, c) != 0) return -1;
        r = 1;
    }
    if (!c->dict_mode) {
        for (; r < w->batch; r++)
            if (put_last_plain(w, c) != 0) return -1;
        return 0;
    }
    if (reserve_index(w, c, c->nvalues + (w->batch - r)) != 0) return -1;
    uint32_t *to = c->index + c->nvalues; /* the one index, filled in */
    size_t m = w->batch - r;
    fill_u32(to, c->index[c->nvalues - 1], m);
    c->nvalues += m;
    return 0;
}

/* ---- encoding a row group ---- */

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    int r = memcmp(a, b, an < bn ? an : bn);
    return r ? r : (an > bn) - (an < bn);
}

static int set_string_stats(pq_writer *w, const column *c, chunk_meta *m) {
    if (!c->nstored) return 0;
    const uint8_t *mn = NULL, *mx = NULL;
    size_t mnl = 0, mxl = 0;
    for (size_t k = 0; k < c->nstored; k++) {
        const uint8_t *p;
        size_t len;
        item_at(c, k, &p, &len);
        if (!mn || bytes_cmp(p, len, mn, mnl) < 0) mn = p, mnl = len;
        if (!mx || bytes_cmp(p, len, mx, mxl) > 0) mx = p, mxl = len;
    }
    m->smin = malloc(mnl + 1);
    m->smax = malloc(mxl + 1);
    if (!m->smin || !m->smax) return fail(w, "out of memory");
    memcpy(m->smin, mn, mnl);
    memcpy(m->smax, mx, mxl);
    m->smin_len = (uint32_t)mnl;
    m->smax_len = (uint32_t)mxl;
    m->has_minmax = true;
    return 0;
}

static void set_fixed_stats(const column *c, chunk_meta *m) {
    if (!c->have_minmax) return;
    m->has_minmax = true;
    switch (c->def.type) {
    case PQ_BOOLEAN: m->min[0] = (uint8_t)c->min.i; m->max[0] = (uint8_t)c->max.i; break;
    case PQ_INT32: {
        int32_t a = (int32_t)c->min.i, b = (int32_t)c->max.i;
        memcpy(m->min, &a, 4);
        memcpy(m->max, &b, 4);
        break;
    }
    case PQ_DOUBLE: memcpy(m->min, &c->min.d, 8); memcpy(m->max, &c->max.d, 8); break;
    default: memcpy(m->min, &c->min.i, 8); memcpy(m->max, &c->max.i, 8); break;
    }
}

/* Compresses a page's `raw` bytes in zstd's `mode` (pq_zstd.h) and writes them with its header. */
static int write_page_of(pq_writer *w, chunk_meta *m, int type, int32_t num_values, int encoding, pq_zstd_mode mode,
                         const uint8_t *raw, size_t rawlen) {
    if (w->page.oom) return fail(w, "out of memory");
    const uint8_t *body = raw;
    size_t blen = rawlen;
    if (w->zstd && !m->raw) {
        const char *why;
        if (pq_zstd_compress(&w->z, mode, raw, rawlen, &w->cbuf, &why) != 0) return fail(w, "zstd: %s", why);
        body = w->cbuf.p;
        blen = w->cbuf.len;
    }
    if (rawlen > INT32_MAX || blen > INT32_MAX) return fail(w, "a page over 2 GiB");
    w->hbuf.len = 0;
    pq_tc t;
    pq_tc_init(&t, &w->hbuf);
    pq_tc_i32(&t, 1, type);
    pq_tc_i32(&t, 2, (int32_t)rawlen);
    pq_tc_i32(&t, 3, (int32_t)blen);
    if (type == PAGE_DATA) {
        pq_tc_struct_begin(&t, 5);
        pq_tc_i32(&t, 1, num_values);
        pq_tc_i32(&t, 2, encoding);
        pq_tc_i32(&t, 3, E_RLE);
        pq_tc_i32(&t, 4, E_RLE);
        pq_tc_struct_end(&t);
    } else {
        pq_tc_struct_begin(&t, 7);
        pq_tc_i32(&t, 1, num_values);
        pq_tc_i32(&t, 2, E_PLAIN);
        pq_tc_struct_end(&t);
    }
    pq_tc_struct_end(&t);
    if (w->hbuf.oom) return fail(w, "out of memory");
    if (type == PAGE_DATA && m->data_page_offset < 0) m->data_page_offset = w->offset;
    if (type == PAGE_DICTIONARY) m->dict_page_offset = w->offset;
    m->uncompressed += (int64_t)(w->hbuf.len + rawlen);
    m->compressed += (int64_t)(w->hbuf.len + blen);
    if (write_bytes(w, w->hbuf.p, w->hbuf.len) != 0) return -1;
    return write_bytes(w, body, blen);
}

/* Compresses w->page and writes it with its header. */
static int write_page(pq_writer *w, chunk_meta *m, int type, int32_t num_values, int encoding, pq_zstd_mode mode) {
    return write_page_of(w, m, type, num_values, encoding, mode, w->page.p, w->page.len);
}

/* PLAIN bytes of stored items [v0, v1) into w->page. */
static void put_plain(pq_writer *w, const column *c, size_t v0, size_t v1) {
    if (c->def.type == PQ_BOOLEAN) {
        uint8_t acc = 0;
        for (size_t i = v0; i < v1; i++) {
            acc |= (uint8_t)(c->values.p[i] << ((i - v0) & 7));
            if (((i - v0) & 7) == 7) {
                pq_buf_byte(&w->page, acc);
                acc = 0;
            }
        }
        if ((v1 - v0) & 7) pq_buf_byte(&w->page, acc);
    } else if (c->def.type == PQ_STRING) {
        size_t a = v0 < c->nstored ? c->offsets[v0] : c->values.len;
        size_t b = v1 < c->nstored ? c->offsets[v1] : c->values.len;
        pq_buf_put(&w->page, c->values.p + a, b - a);
    } else {
        size_t wdt = width(c->def.type);
        pq_buf_put(&w->page, c->values.p + v0 * wdt, (v1 - v0) * wdt);
    }
}

/* A required integer chunk of one value throughout (the attribution parts a trace does not
 * have: all 0) that is not a dictionary already: a dictionary of that value and one RLE run a
 * page, a few bytes, where its PLAIN pages cost a copy, a scan and zstd's pass over 8 bytes a
 * row. Its chunk is UNCOMPRESSED (Parquet's codec is per column chunk). */
static bool constant_ints(const column *c, size_t rows) {
    return !c->dict_mode && !c->def.optional && c->have_minmax && c->min.i == c->max.i && c->nvalues == rows &&
           (c->def.type == PQ_INT32 || c->def.type == PQ_INT64 || c->def.type == PQ_TIMESTAMP_NS);
}

static int write_constant_chunk(pq_writer *w, column *c, chunk_meta *m) {
    m->dict = true;
    m->raw = true; /* pages of a few bytes: zstd's frame would add to them */
    set_fixed_stats(c, m);
    w->page.len = 0;
    put_plain(w, c, 0, 1);
    if (write_page(w, m, PAGE_DICTIONARY, 1, E_PLAIN, PQ_ZSTD_LEVEL) != 0) return -1;
    for (uint32_t r0 = 0; r0 < w->rows; r0 += w->opt.page_rows) {
        uint32_t n = w->rows - r0 > w->opt.page_rows ? w->opt.page_rows : w->rows - r0;
        w->page.len = 0;
        pq_buf_byte(&w->page, 1);        /* index width: 1 (some readers refuse 0) */
        pq_buf_uvarint(&w->page, (uint64_t)n << 1); /* an RLE run of n ... */
        pq_buf_byte(&w->page, 0);        /* ... index 0 */
        if (write_page(w, m, PAGE_DATA, (int32_t)n, E_RLE_DICTIONARY, PQ_ZSTD_LEVEL) != 0) return -1;
    }
    return 0;
}

/* A fixed-width dictionary column's row group: its dictionary built from the PLAIN values
 * (integers in order of value) and taken when it pays (at most PQ_DICT_MAX entries, not
 * nearly every value distinct: see nearly_all_distinct); PLAIN values stay otherwise. */
static int build_dictionary(pq_writer *w, column *c) {
    if (reserve_index(w, c, c->nvalues) != 0) return -1;
    size_t wdt = width(c->def.type);
    bool sign = c->def.type != PQ_DOUBLE;
    int64_t bounds[2] = {c->min.i, c->max.i}; /* every value's: a fixed-width put notes each */
    size_t nd = pq_dict_build(&w->order, c->values.p, c->nvalues, wdt, sign, c->index,
                              sign && c->have_minmax ? bounds : NULL);
    if (!nd) return fail(w, "out of memory");
    c->ndict = (uint32_t)nd;
    if (nd > PQ_DICT_MAX || (c->nvalues >= 64 && nearly_all_distinct(c))) return 0;
    memcpy(c->values.p, w->order.entries, nd * wdt); /* nd <= nvalues: it fits */
    c->values.len = nd * wdt;
    c->nstored = nd;
    c->dict_mode = true;
    return 0;
}

/* A DELTA column's zstd mode for this chunk. A column that says ENTROPY or NONE holds noisy
 * deltas (times), which zstd's match search does not shrink; but deltas that repeat (a
 * fixed-rate timer, a coarse clock, generated times) shrink under it. So PROBE of the chunk's
 * values are encoded and compressed both ways, and the chunk goes at the level (whole-byte
 * widths) when the level takes a twentieth off the entropy coding's bytes: two 5 s executor
 * runs' times code 0.3-5 % larger at the level (so do test_fold_polls_bytes'), fleet_gen's (a
 * thousand distinct gaps) 14 % smaller, test_fold_instructions' (an arithmetic progression)
 * 58 % smaller. ~0.5 M instructions a chunk.
 * The PROBE values are PROBE_WINDOWS runs spread evenly over the chunk, its first and last
 * included, each a DELTA stream of its own, compressed together: a chunk of up to a row group
 * (1 Mi rows) is compacted from many segments, of other hosts and runs, and its first 2 048
 * values are one segment's (a patterned host first decided a noisy fleet's chunk, and a noisy
 * one a patterned fleet's: test_parquet_delta_probe). */
enum { PROBE = 2048, PROBE_WINDOWS = 8 };
static void encode_probe(pq_buf *page, const column *c, unsigned slack) {
    size_t n = c->nvalues, windows = n <= PROBE ? 1 : PROBE_WINDOWS;
    size_t len = windows == 1 ? n : PROBE / PROBE_WINDOWS;
    for (size_t k = 0; k < windows; k++) {
        size_t at = windows == 1 ? 0 : k * (n - len) / (windows - 1);
        if (c->def.type == PQ_INT32) pq_delta_encode_i32(page, (const int32_t *)(const void *)c->values.p + at, len, slack);
        else pq_delta_encode(page, (const int64_t *)(const void *)c->values.p + at, len, slack);
    }
}

static pq_zstd_mode delta_mode(pq_writer *w, const column *c) {
    pq_zstd_mode mode = (pq_zstd_mode)c->def.zstd;
    pq_zstd_mode eff = w->zstd ? pq_zstd_effective(&w->z, mode) : mode;
    if (!w->zstd || (eff != PQ_ZSTD_ENTROPY && eff != PQ_ZSTD_NONE) || c->nvalues < 64) return mode;
    size_t sizes[2];
    for (int k = 0; k < 2; k++) {
        w->page.len = 0;
        encode_probe(&w->page, c, k ? PQ_DELTA_WHOLE_BYTES : PQ_DELTA_NEAR_BYTES);
        const char *why;
        if (w->page.oom || pq_zstd_compress(&w->z, k ? PQ_ZSTD_LEVEL : PQ_ZSTD_ENTROPY, w->page.p, w->page.len, &w->cbuf, &why) != 0)
            return mode; /* a failure here is the page's to report */
        sizes[k] = w->cbuf.len;
    }
    return sizes[1] * 20 < sizes[0] * 19 ? PQ_ZSTD_LEVEL : mode;
}

static int write_chunk(pq_writer *w, column *c, chunk_meta *m) {
    *m = (chunk_meta){.data_page_offset = -1, .dict_page_offset = -1, .num_values = w->rows,
                      .nulls = c->nulls};
    if (constant_ints(c, w->rows)) return write_constant_chunk(w, c, m);
    if (c->dict_mode && c->nvalues >= 64 && nearly_all_distinct(c) && spill_dictionary(w, c) != 0) return -1;
    if (c->def.dictionary && !c->dict_mode && c->nvalues && c->def.type != PQ_STRING && build_dictionary(w, c) != 0)
        return -1;
    bool dict = c->dict_mode && c->ndict > 0;
    bool delta = !dict && c->def.delta &&
                 (c->def.type == PQ_INT32 || c->def.type == PQ_INT64 || c->def.type == PQ_TIMESTAMP_NS);
    pq_zstd_mode zmode = delta ? delta_mode(w, c) : (pq_zstd_mode)c->def.zstd;
    /* a column that zstd does not pay for (pq_zstd.h): every page as it is */
    m->raw = w->zstd && pq_zstd_effective(&w->z, zmode) == PQ_ZSTD_NONE;
    m->delta = delta;
    if (c->def.type == PQ_STRING) {
        if (set_string_stats(w, c, m) != 0) return -1;
    } else {
        set_fixed_stats(c, m);
    }
    unsigned bw = 0;
    const uint32_t *index = c->index;
    if (dict) {
        m->dict = true;
        bool ints = c->def.type == PQ_INT32 || c->def.type == PQ_INT64 || c->def.type == PQ_TIMESTAMP_NS;
        w->page.len = 0;
        put_plain(w, c, 0, c->ndict);
        /* sorted integers: their high bytes repeat, matches zstd's level 1 finds with 5-byte
         * matches as well as level 3 does (durations' 0.7-3.7 % smaller, ~5 % fewer
         * instructions); strings at the level */
        pq_zstd_mode dict_mode = ints ? PQ_ZSTD_FAST : PQ_ZSTD_LEVEL;
        if (write_page(w, m, PAGE_DICTIONARY, (int32_t)c->ndict, E_PLAIN, dict_mode) != 0) return -1;
        bw = pq_bit_width(c->ndict - 1);
        if (bw == 0) bw = 1; /* some readers refuse width 0 */
        /* wider than a byte: whole bytes when zstd follows, so that it sees an index's high
         * byte (coarse, mostly small) apart from its low one (durations 1.61 -> 1.54 bytes a
         * poll); a few bits stay packed (workers: 0.10 against 0.14) */
        if (w->zstd && bw > 8) bw = (bw + 7) & ~7u;
    }
    size_t v = 0;
    for (uint32_t r0 = 0;; r0 += w->opt.page_rows) {
        uint32_t r1 = w->rows - r0 > w->opt.page_rows ? r0 + w->opt.page_rows : w->rows;
        size_t v0 = v;
        if (c->def.optional) {
            for (uint32_t r = r0; r < r1; r++) v += c->defs[r];
        } else {
            v += r1 - r0;
        }
        int enc = dict ? E_RLE_DICTIONARY : delta ? E_DELTA_BINARY_PACKED : E_PLAIN;
        bool ints = c->def.type == PQ_INT32 || c->def.type == PQ_INT64 || c->def.type == PQ_TIMESTAMP_NS;
        /* PLAIN integers: a duration's low bytes are noise and its high bytes zeros, where
         * level 3's search finds less than level 1's (duration_ns 2.01 bytes a poll at level 3,
         * 1.84 at 1) */
        pq_zstd_mode mode = enc == E_PLAIN && ints && zmode == PQ_ZSTD_LEVEL ? PQ_ZSTD_FAST : zmode;
        /* indexes of two or three bytes: level 3's second hash finds nothing that level 1's with
         * a wider table misses (durations 1.480 -> 1.477 bytes a poll on two 5 s executor runs,
         * 1.515 -> 1.494 on test_fold_polls_bytes' segment), at ~3/4 of its instructions */
        if (dict && bw >= 16 && zmode == PQ_ZSTD_LEVEL) mode = PQ_ZSTD_FAST_WIDE;
        if (enc == E_PLAIN && !c->def.optional && c->def.type != PQ_BOOLEAN && c->def.type != PQ_STRING) {
            /* the values as they lie: compressed from the column's buffer, not copied first */
            size_t wdt = width(c->def.type);
            if (write_page_of(w, m, PAGE_DATA, (int32_t)(r1 - r0), enc, mode, c->values.p + v0 * wdt, (v - v0) * wdt) != 0)
                return -1;
            if (r1 >= w->rows) break;
            continue;
        }
        /* DELTA widths: whole bytes where zstd's match search follows (task ids' repeating
         * deltas: 0.88 against 1.11 bytes a wake), exact in a page stored as it is, and near
         * whole bytes where zstd only entropy codes (delta_binary_packed.h) */
        unsigned slack = PQ_DELTA_EXACT;
        if (w->zstd && !m->raw)
            slack = pq_zstd_effective(&w->z, mode) == PQ_ZSTD_ENTROPY ? PQ_DELTA_NEAR_BYTES : PQ_DELTA_WHOLE_BYTES;
        w->page.len = 0;
        if (c->def.optional) {
            w->levels.len = 0;
            pq_rle_encode_u8(&w->levels, c->defs + r0, r1 - r0, 1);
            if (w->levels.oom) return fail(w, "out of memory");
            pq_buf_le32(&w->page, (uint32_t)w->levels.len);
            pq_buf_put(&w->page, w->levels.p, w->levels.len);
        }
        if (dict) {
            pq_buf_byte(&w->page, (uint8_t)bw);
            pq_rle_encode(&w->page, index + v0, v - v0, bw);
        } else if (delta && c->def.type == PQ_INT32) {
            pq_delta_encode_i32(&w->page, (const int32_t *)(const void *)c->values.p + v0, v - v0, slack);
        } else if (delta) {
            pq_delta_encode(&w->page, (const int64_t *)(const void *)c->values.p + v0, v - v0, slack);
        } else {
            put_plain(w, c, v0, v);
        }
        if (write_page(w, m, PAGE_DATA, (int32_t)(r1 - r0), enc, mode) != 0) return -1;
        if (r1 >= w->rows) break;
    }
    return 0;
}

static int flush_row_group(pq_writer *w) {
    if (w->rows == 0 || w->failed) return w->failed ? -1 : 0;
    row_group_meta *g = realloc(w->groups, (w->ngroups + 1) * sizeof *g);
    if (!g) return fail(w, "out of memory");
    w->groups = g;
    g = &w->groups[w->ngroups++];
    *g = (row_group_meta){.rows = w->rows, .file_offset = w->offset};
    g->chunks = calloc((size_t)w->ncols, sizeof *g->chunks);
    if (!g->chunks) return fail(w, "out of memory");
    for (int i = 0; i < w->ncols; i++) {
        column *c = &w->cols[i];
        if (c->values.oom) return fail(w, "out of memory");
        if (write_chunk(w, c, &g->chunks[i]) != 0 || carry_last(w, c) != 0) return -1;
        g->total_uncompressed += g->chunks[i].uncompressed;
        g->total_compressed += g->chunks[i].compressed;
        c->values.len = 0;
        c->nvalues = 0;
        c->nstored = 0;
        c->nulls = 0;
        c->have_minmax = false;
        c->dict_mode = hashed_dictionary(&c->def);
        c->ndict = 0;
        if (c->slots) memset(c->slots, 0, c->nslots * sizeof *c->slots);
    }
    w->rows = 0;
    return 0;
}

int pq_end_row(pq_writer *w) {
    if (w->failed) return -1;
    if (w->batch) return fail(w, "pq_end_row inside a batch of rows");
    for (int i = 0; i < w->ncols; i++) {
        if (w->cols[i].puts != 1) return fail(w, "column %s: no value in row %llu", w->cols[i].name,
                                              (unsigned long long)w->rows_total);
        w->cols[i].puts = 0;
    }
    w->rows++;
    w->rows_total++;
    return w->rows == w->opt.row_group_rows ? flush_row_group(w) : 0;
}

int pq_end_rows(pq_writer *w) {
    if (w->failed) return -1;
    if (!w->batch) return fail(w, "pq_end_rows without pq_begin_rows");
    for (int i = 0; i < w->ncols; i++) {
        if (w->cols[i].puts != 1) return fail(w, "column %s: no values in the batch of rows %llu..", w->cols[i].name,
                                              (unsigned long long)w->rows_total);
        w->cols[i].puts = 0;
    }
    w->rows += w->batch;
    w->rows_total += w->batch;
    w->batch = 0;
    return w->rows == w->opt.row_group_rows ? flush_row_group(w) : 0;
}

/* ---- footer ---- */

static void put_schema(pq_writer *w, pq_tc *t) {
    pq_tc_list(t, 2, PQ_TC_STRUCT, (uint32_t)w->ncols + 1);
    pq_tc_struct_begin(t, 0);
    pq_tc_string(t, 4, "schema");
    pq_tc_i32(t, 5, w->ncols);
    pq_tc_struct_end(t);
    for (int i = 0; i < w->ncols; i++) {
        const pq_column_def *d = &w->cols[i].def;
        pq_tc_struct_begin(t, 0);
        pq_tc_i32(t, 1, physical(d->type));
        pq_tc_i32(t, 3, d->optional ? REP_OPTIONAL : REP_REQUIRED);
        pq_tc_string(t, 4, d->name);
        if (d->type == PQ_STRING) pq_tc_i32(t, 6, CONVERTED_UTF8);
        if (d->type == PQ_STRING || d->type == PQ_TIMESTAMP_NS) {
            pq_tc_struct_begin(t, 10); /* LogicalType */
            if (d->type == PQ_STRING) {
                pq_tc_struct_begin(t, 1); /* STRING */
                pq_tc_struct_end(t);
            } else {
                pq_tc_struct_begin(t, 8); /* TIMESTAMP */
                pq_tc_bool(t, 1, true); /* isAdjustedToUTC */
                pq_tc_struct_begin(t, 2); /* unit */
                pq_tc_struct_begin(t, 3); /* NANOS */
                pq_tc_struct_end(t);
                pq_tc_struct_end(t);
                pq_tc_struct_end(t);
            }
            pq_tc_struct_end(t);
        }
        pq_tc_struct_end(t);
    }
}

static void put_chunk(pq_writer *w, pq_tc *t, int col, const chunk_meta *m) {
    const pq_column_def *d = &w->cols[col].def;
    pq_tc_struct_begin(t, 0);
    pq_tc_i64(t, 2, m->dict_page_offset >= 0 ? m->dict_page_offset : m->data_page_offset);
    pq_tc_struct_begin(t, 3);
    pq_tc_i32(t, 1, physical(d->type));
    pq_tc_list(t, 2, PQ_TC_I32, 2u + m->dict + m->delta);
    pq_tc_elem_i32(t, E_PLAIN);
    pq_tc_elem_i32(t, E_RLE);
    if (m->dict) pq_tc_elem_i32(t, E_RLE_DICTIONARY);
    if (m->delta) pq_tc_elem_i32(t, E_DELTA_BINARY_PACKED);
    pq_tc_list(t, 3, PQ_TC_BINARY, 1);
    pq_tc_elem_string(t, d->name);
    pq_tc_i32(t, 4, w->zstd && !m->raw ? CODEC_ZSTD : CODEC_UNCOMPRESSED);
    pq_tc_i64(t, 5, m->num_values);
    pq_tc_i64(t, 6, m->uncompressed);
    pq_tc_i64(t, 7, m->compressed);
    pq_tc_i64(t, 9, m->data_page_offset);
    if (m->dict_page_offset >= 0) pq_tc_i64(t, 11, m->dict_page_offset);
    pq_tc_struct_begin(t, 12); /* Statistics */
    pq_tc_i64(t, 3, m->nulls);
    if (m->has_minmax) {
        if (d->type == PQ_STRING) {
            pq_tc_binary(t, 5, m->smax, m->smax_len);
            pq_tc_binary(t, 6, m->smin, m->smin_len);
        } else {
            size_t wdt = width(d->type);
            pq_tc_binary(t, 5, m->max, (uint32_t)wdt);
            pq_tc_binary(t, 6, m->min, (uint32_t)wdt);
        }
    }
    pq_tc_struct_end(t);
    pq_tc_struct_end(t); /* ColumnMetaData */
    pq_tc_struct_end(t); /* ColumnChunk */
}

static int write_footer(pq_writer *w) {
    pq_buf b = {0};
    pq_tc t;
    pq_tc_init(&t, &b);
    pq_tc_i32(&t, 1, 1);
    put_schema(w, &t);
    pq_tc_i64(&t, 3, (int64_t)w->rows_total);
    pq_tc_list(&t, 4, PQ_TC_STRUCT, (uint32_t)w->ngroups);
    for (size_t g = 0; g < w->ngroups; g++) {
        const row_group_meta *rg = &w->groups[g];
        pq_tc_struct_begin(&t, 0);
        pq_tc_list(&t, 1, PQ_TC_STRUCT, (uint32_t)w->ncols);
        for (int i = 0; i < w->ncols; i++) put_chunk(w, &t, i, &rg->chunks[i]);
        pq_tc_i64(&t, 2, rg->total_uncompressed);
        pq_tc_i64(&t, 3, rg->rows);
        pq_tc_i64(&t, 5, rg->file_offset);
        pq_tc_i64(&t, 6, rg->total_compressed);
        pq_tc_struct_end(&t);
    }
    if (w->nkv) {
        pq_tc_list(&t, 5, PQ_TC_STRUCT, (uint32_t)(w->nkv / 2));
        for (size_t i = 0; i < w->nkv; i += 2) {
            pq_tc_struct_begin(&t, 0);
            pq_tc_string(&t, 1, w->kv[i]);
            pq_tc_string(&t, 2, w->kv[i + 1]);
            pq_tc_struct_end(&t);
        }
    }
    pq_tc_string(&t, 6, "dial9-c parquet writer");
    pq_tc_list(&t, 7, PQ_TC_STRUCT, (uint32_t)w->ncols); /* column_orders: TypeDefinedOrder */
    for (int i = 0; i < w->ncols; i++) {
        pq_tc_struct_begin(&t, 0);
        pq_tc_struct_begin(&t, 1);
        pq_tc_struct_end(&t);
        pq_tc_struct_end(&t);
    }
    pq_tc_struct_end(&t);
    if (b.oom || b.len > UINT32_MAX) {
        pq_buf_free(&b);
        return fail(w, "out of memory");
    }
    int rc = write_bytes(w, b.p, b.len);
    uint8_t tail[8] = {(uint8_t)b.len, (uint8_t)(b.len >> 8), (uint8_t)(b.len >> 16),
                       (uint8_t)(b.len >> 24), 'P', 'A', 'R', '1'};
    if (rc == 0) rc = write_bytes(w, tail, 8);
    pq_buf_free(&b);
    return rc;
}

int pq_writer_close(pq_writer *w, char *err, size_t errlen) {
    if (!w->failed) {
        for (int i = 0; i < w->ncols; i++)
            if (w->cols[i].puts) fail(w, "a row was begun and not ended");
        if (w->batch) fail(w, "a batch of rows was begun and not ended");
    }
    if (!w->failed) flush_row_group(w);
    if (!w->failed) write_footer(w);
    if (!w->failed && fflush(w->f) != 0) fail(w, "write failed");
    int rc = w->failed ? -1 : 0;
    if (rc) snprintf(err, errlen, "parquet: %s", w->err);
    pq_writer_abort(w);
    return rc;
}

void pq_writer_abort(pq_writer *w) {
    if (!w) return;
    if (w->cols)
        for (int i = 0; i < w->ncols; i++) {
            free(w->cols[i].name);
            pq_buf_free(&w->cols[i].values);
            pq_buf_free(&w->cols[i].carry);
            pq_grown_free(w->cols[i].offsets, w->cols[i].offsets_cap * sizeof *w->cols[i].offsets);
            free(w->cols[i].defs);
            pq_grown_free(w->cols[i].index, w->cols[i].index_cap * sizeof *w->cols[i].index);
            free(w->cols[i].slots);
        }
    free(w->cols);
    for (size_t g = 0; g < w->ngroups; g++) {
        if (w->groups[g].chunks)
            for (int i = 0; i < w->ncols; i++) {
                free(w->groups[g].chunks[i].smin);
                free(w->groups[g].chunks[i].smax);
            }
        free(w->groups[g].chunks);
    }
    free(w->groups);
    for (size_t i = 0; i < w->nkv; i++) free(w->kv[i]);
    free(w->kv);
    if (w->zstd) pq_zstd_free(&w->z);
    pq_buf_free(&w->page);
    pq_buf_free(&w->levels);
    pq_buf_free(&w->cbuf);
    pq_buf_free(&w->hbuf);
    free(w->id_index);
    pq_dict_order_free(&w->order);
    free(w);
}
