/* The Parquet writer's encodings, decoded by this test's own small readers (not the writer's
 * code): the RLE/bit-packed hybrid round trips random sequences of every bit width and run
 * shape, and holds the spec's example bytes; the Thrift compact encoder writes the protocol's
 * bytes; a written file has the magic at both ends and a footer that parses, as a Thrift
 * struct, to exactly its length, with the row count in it; an integer dictionary sorted by
 * value keeps every index on its value. The readers that check values end to end (DuckDB,
 * hyparquet) are in tests/parquet. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "parquet/copy_minmax.h"
#include "parquet/dict_order.h"
#include "parquet/pq_buf.h"
#include "parquet/pq_writer.h"
#include "parquet/rle_hybrid.h"
#include "parquet/thrift_compact.h"

static d9t_rng rng = {42};
static uint64_t next(void) { return d9t_rng_next(&rng); }

static uint64_t uvarint(const uint8_t *p, size_t n, size_t *at) {
    uint64_t v = 0;
    for (unsigned s = 0; *at < n && s < 64; s += 7) {
        uint8_t b = p[(*at)++];
        v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) break;
    }
    return v;
}

/* The hybrid's reading side, from the Parquet spec: -1 on a malformed input. */
static int rle_decode(const uint8_t *p, size_t n, unsigned bw, uint32_t *out, size_t count) {
    size_t at = 0, got = 0;
    while (got < count) {
        if (at >= n) return -1;
        uint64_t h = uvarint(p, n, &at);
        if (h & 1) {
            size_t vals = (size_t)(h >> 1) * 8;
            uint64_t acc = 0;
            unsigned bits = 0;
            for (size_t i = 0; i < vals; i++) {
                while (bits < bw) {
                    if (at >= n) return -1;
                    acc |= (uint64_t)p[at++] << bits;
                    bits += 8;
                }
                uint32_t v = (uint32_t)(acc & (bw == 32 ? 0xffffffffu : ((1u << bw) - 1)));
                acc >>= bw;
                bits -= bw;
                if (got < count) out[got++] = v;
            }
        } else {
            size_t run = (size_t)(h >> 1);
            uint32_t v = 0;
            for (unsigned i = 0; i < (bw + 7) / 8; i++) {
                if (at >= n) return -1;
                v |= (uint32_t)p[at++] << (8 * i);
            }
            if (run == 0 || got + run > count) return -1;
            for (size_t i = 0; i < run; i++) out[got++] = v;
        }
    }
    return at == n ? 0 : -1; /* nothing left over */
}

static void test_rle_examples(void) {
    /* eight 1s at width 1: one RLE run, header 8<<1, value byte 1 */
    uint32_t ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    pq_buf b = {0};
    pq_rle_encode(&b, ones, 8, 1);
    CHECK(b.len == 2 && b.p[0] == 0x10 && b.p[1] == 0x01);
    /* 0..7 at width 3: one bit-packed group, header 1<<1|1, the spec's bytes 88 C6 FA */
    uint32_t seq[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    b.len = 0;
    pq_rle_encode(&b, seq, 8, 3);
    CHECK(b.len == 4 && b.p[0] == 0x03 && b.p[1] == 0x88 && b.p[2] == 0xc6 && b.p[3] == 0xfa);
    CHECK_EQ_U64(pq_bit_width(0), 0);
    CHECK_EQ_U64(pq_bit_width(1), 1);
    CHECK_EQ_U64(pq_bit_width(255), 8);
    CHECK_EQ_U64(pq_bit_width(256), 9);
    CHECK_EQ_U64(pq_bit_width(UINT32_MAX), 32);
    pq_buf_free(&b);
}

static void test_rle_random(void) {
    enum { N = 5000 };
    uint32_t *v = malloc(N * sizeof *v), *back = malloc(N * sizeof *back);
    uint8_t *v8 = malloc(N);
    int bad = 0;
    for (int round = 0; round < 400; round++) {
        unsigned bw = 1 + (unsigned)(next() % 32);
        uint32_t mask = bw == 32 ? 0xffffffffu : (1u << bw) - 1;
        size_t n = (size_t)(next() % N) + 1;
        int shape = (int)(next() % 4); /* runs, noise, runs of 7 and 8 around group edges, mixed */
        for (size_t i = 0; i < n;) {
            size_t run = shape == 0 ? 1 + next() % 40 : shape == 1 ? 1 : shape == 2 ? 7 + next() % 3 : 1 + next() % 12;
            uint32_t x = (uint32_t)next() & mask;
            for (size_t k = 0; k < run && i < n; k++) v[i++] = x;
        }
        pq_buf b = {0};
        pq_rle_encode(&b, v, n, bw);
        memset(back, 0xab, n * sizeof *back);
        if (b.oom || rle_decode(b.p, b.len, bw, back, n) != 0 || memcmp(v, back, n * sizeof *v) != 0) {
            if (!bad++) fprintf(stderr, "rle round %d (width %u, %zu values, shape %d) differs\n", round, bw, n, shape);
        }
        /* the byte variant (definition levels), width 1 */
        for (size_t i = 0; i < n; i++) v8[i] = (uint8_t)(v[i] & 1);
        b.len = 0;
        pq_rle_encode_u8(&b, v8, n, 1);
        bool same = rle_decode(b.p, b.len, 1, back, n) == 0;
        for (size_t i = 0; same && i < n; i++) same = back[i] == v8[i];
        if (!same && !bad++) fprintf(stderr, "rle u8 round %d differs\n", round);
        pq_buf_free(&b);
    }
    CHECK(bad == 0);
    free(v);
    free(back);
    free(v8);
}

static void test_thrift_bytes(void) {
    pq_buf b = {0};
    pq_tc t;
    pq_tc_init(&t, &b);
    pq_tc_i32(&t, 1, 1);         /* 0x15 (delta 1, i32), zigzag 2 */
    pq_tc_string(&t, 2, "a");    /* delta 1, binary: 0x18, length 1, 'a' */
    pq_tc_i64(&t, 20, -1);       /* delta 18 > 15: 0x06, zigzag(20) = 40, zigzag(-1) = 1 */
    pq_tc_bool(&t, 21, true);    /* 0x11 */
    pq_tc_list(&t, 22, PQ_TC_I32, 2); /* 0x19, 0x25 */
    pq_tc_elem_i32(&t, -2);      /* 3 */
    pq_tc_elem_i32(&t, 300);     /* 600 = 0xd8 0x04 */
    pq_tc_struct_begin(&t, 23);  /* 0x1c */
    pq_tc_i32(&t, 1, 0);         /* 0x15 0x00: ids restart inside */
    pq_tc_struct_end(&t);        /* 0x00 */
    pq_tc_i32(&t, 24, 5);        /* back outside: delta 1 from 23: 0x15 0x0a */
    pq_tc_struct_end(&t);
    static const uint8_t want[] = {0x15, 0x02, 0x18, 0x01, 'a', 0x06, 0x28, 0x01, 0x11, 0x19, 0x25, 0x03,
                                   0xd8, 0x04, 0x1c, 0x15, 0x00, 0x00, 0x15, 0x0a, 0x00};
    CHECK_EQ_U64(b.len, sizeof want);
    CHECK(b.len == sizeof want && memcmp(b.p, want, sizeof want) == 0);
    pq_buf_free(&b);
}

/* A Thrift compact value of type `type` skipped; -1 when malformed. Returns the i64 of field
 * 3 of the outermost struct in *rows (FileMetaData.num_rows). */
static int skip_value(const uint8_t *p, size_t n, size_t *at, int type, int depth, int64_t *rows);
static int skip_struct(const uint8_t *p, size_t n, size_t *at, int depth, int64_t *rows) {
    int16_t last = 0;
    for (;;) {
        if (*at >= n || depth > 16) return -1;
        uint8_t h = p[(*at)++];
        if (h == 0) return 0;
        int type = h & 0x0f;
        int16_t id = (h >> 4) ? (int16_t)(last + (h >> 4)) : 0;
        if (!(h >> 4)) {
            uint64_t z = uvarint(p, n, at);
            id = (int16_t)((z >> 1) ^ -(z & 1));
        }
        last = id;
        if (depth == 0 && id == 3 && type == PQ_TC_I64) {
            uint64_t z = uvarint(p, n, at);
            *rows = (int64_t)((z >> 1) ^ -(z & 1));
            continue;
        }
        if (skip_value(p, n, at, type, depth + 1, rows) != 0) return -1;
    }
}

static int skip_value(const uint8_t *p, size_t n, size_t *at, int type, int depth, int64_t *rows) {
    switch (type) {
    case PQ_TC_TRUE: case PQ_TC_FALSE: return 0;
    case PQ_TC_BYTE: return ++*at <= n ? 0 : -1;
    case PQ_TC_I16: case PQ_TC_I32: case PQ_TC_I64: uvarint(p, n, at); return *at <= n ? 0 : -1;
    case PQ_TC_DOUBLE: *at += 8; return *at <= n ? 0 : -1;
    case PQ_TC_BINARY: {
        uint64_t len = uvarint(p, n, at);
        if (len > n - *at) return -1;
        *at += len;
        return 0;
    }
    case PQ_TC_LIST: {
        if (*at >= n) return -1;
        uint8_t h = p[(*at)++];
        uint64_t count = h >> 4;
        if (count == 15) count = uvarint(p, n, at);
        for (uint64_t i = 0; i < count; i++)
            if ((h & 0x0f) == PQ_TC_STRUCT ? skip_struct(p, n, at, depth, rows) != 0
                                           : skip_value(p, n, at, h & 0x0f, depth, rows) != 0)
                return -1;
        return 0;
    }
    case PQ_TC_STRUCT: return skip_struct(p, n, at, depth, rows);
    default: return -1;
    }
}

static void test_file_frame(void) {
    for (int round = 0; round < 50; round++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        pq_column_def cols[] = {
            {"s", PQ_STRING, false, true, false, false}, {"t", PQ_TIMESTAMP_NS, false, false, true, false},
            {"o", PQ_INT64, true, round % 2, false, round % 3 == 0}, {"b", PQ_BOOLEAN, true, false, false, false},
            {"i", PQ_INT32, false, true, false, false}, {"d", PQ_DOUBLE, true, false, false, false},
        };
        pq_options opt = {.row_group_rows = 1 + (uint32_t)(next() % 700), .page_rows = 1 + (uint32_t)(next() % 300)};
        char err[256];
        pq_writer *w = pq_writer_open(f, cols, 6, &opt, err, sizeof err);
        CHECK(w != NULL);
        if (!w) return;
        if (round == 0) pq_writer_add_kv(w, "k", "v");
        uint64_t rows = next() % 3000;
        for (uint64_t r = 0; r < rows; r++) {
            char s[16];
            int n = snprintf(s, sizeof s, "x%llu", (unsigned long long)(next() % 50));
            pq_put_str(w, 0, s, (size_t)n);
            pq_put_i64(w, 1, (int64_t)r);
            if (r % 3) pq_put_i64(w, 2, (int64_t)(next() % 10));
            else pq_put_null(w, 2);
            if (r % 5) pq_put_bool(w, 3, r & 1);
            else pq_put_null(w, 3);
            pq_put_i32(w, 4, (int32_t)(r % 7));
            pq_put_double(w, 5, (double)r / 3);
            pq_end_row(w);
        }
        CHECK(pq_writer_close(w, err, sizeof err) == 0);
        fclose(f);
        const uint8_t *p = (const uint8_t *)buf;
        CHECK(len >= 12 && memcmp(p, "PAR1", 4) == 0 && memcmp(p + len - 4, "PAR1", 4) == 0);
        uint32_t flen = (uint32_t)p[len - 8] | (uint32_t)p[len - 7] << 8 | (uint32_t)p[len - 6] << 16 |
                        (uint32_t)p[len - 5] << 24;
        CHECK(flen < len - 12);
        size_t at = len - 8 - flen;
        int64_t got_rows = -1;
        CHECK(skip_struct(p, len - 8, &at, 0, &got_rows) == 0);
        CHECK_EQ_U64(at, len - 8); /* the footer is exactly its length */
        CHECK_EQ_U64((uint64_t)got_rows, rows);
        free(buf);
    }
}

static void test_misuse(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pq_column_def cols[] = {{"a", PQ_INT64, false, false, false, false}, {"b", PQ_STRING, false, false, false, false}};
    char err[256];
    pq_writer *w = pq_writer_open(f, cols, 2, NULL, err, sizeof err);
    CHECK(pq_put_i64(w, 0, 1) == 0);
    CHECK(pq_end_row(w) == -1); /* b missing */
    CHECK(pq_writer_close(w, err, sizeof err) == -1);
    CHECK(strstr(err, "column b") != NULL);
    w = pq_writer_open(f, cols, 2, NULL, err, sizeof err);
    CHECK(pq_put_str(w, 0, "x", 1) == -1); /* wrong type */
    CHECK(pq_put_null(w, 1) == -1);         /* b is required */
    pq_writer_abort(w);
    /* pq_put_same: not before a first row, not twice in a row, not on an optional column */
    pq_column_def opt_cols[] = {{"a", PQ_INT64, false, true, false, false}, {"n", PQ_INT64, true, false, false, false}};
    w = pq_writer_open(f, opt_cols, 2, NULL, err, sizeof err);
    CHECK(pq_put_same(w, 0) == -1);
    CHECK(pq_writer_close(w, err, sizeof err) == -1);
    CHECK(strstr(err, "without a previous row") != NULL);
    w = pq_writer_open(f, opt_cols, 2, NULL, err, sizeof err);
    CHECK(pq_put_i64(w, 0, 7) == 0 && pq_put_i64(w, 1, 8) == 0 && pq_end_row(w) == 0);
    CHECK(pq_put_same(w, 0) == 0);
    CHECK(pq_put_same(w, 0) == -1);
    CHECK(pq_writer_close(w, err, sizeof err) == -1);
    CHECK(strstr(err, "two values") != NULL);
    w = pq_writer_open(f, opt_cols, 2, NULL, err, sizeof err);
    CHECK(pq_put_i64(w, 0, 7) == 0 && pq_put_i64(w, 1, 8) == 0 && pq_end_row(w) == 0);
    CHECK(pq_put_same(w, 1) == -1);
    CHECK(pq_writer_close(w, err, sizeof err) == -1);
    CHECK(strstr(err, "required columns") != NULL);
    CHECK(pq_writer_open(f, cols, 0, NULL, err, sizeof err) == NULL);
    fclose(f);
    free(buf);
}

/* A fixed-width dictionary built in order of value (dict_order.h): its entries distinct and
 * in ascending order (signed integers by value, other values by their bits), every value's
 * index naming its own value; INT32 and INT64 widths, negatives, repeats, keys in a narrow
 * range (the table by value) and a wide one (few distinct values: the hash table, then those
 * sorted; else the radix sort: key and row in a word, or rows alone for 64-bit spreads; digits
 * of 11 bits, or 16 from 64 Ki values), bounds given or found, sizes from 1 to 100 000. */
static uint64_t value_at(const uint8_t *e, size_t i, size_t width, bool sign) {
    if (width == 4) {
        uint32_t v;
        memcpy(&v, e + i * 4, 4);
        return sign ? (uint64_t)(int64_t)(int32_t)v : v;
    }
    uint64_t v;
    memcpy(&v, e + i * 8, 8);
    return v;
}

static bool in_order(uint64_t a, uint64_t b, bool sign) { return sign ? (int64_t)a < (int64_t)b : a < b; }

static void test_dict_build(void) {
    pq_dict_order o = {0};
    int bad = 0;
    for (int round = 0; round < 600 && !bad; round++) {
        size_t width = round % 2 ? 4 : 8;
        bool sign = round % 3 != 0, given = sign && round % 5 < 3;
        size_t n = round % 100 == 0 ? 65536 + next() % 40000 : 1 + next() % (round % 10 == 0 ? 20000 : 300);
        /* the values' spread: a few, about n, a byte's worth, 40 bits, everything */
        uint64_t mask = (uint64_t[]){0x3, 0xfff, 0xff00ff00ull, 0xffffffffffull, ~0ull}[next() % 5];
        if (round % 10 == 0) mask = round % 20 ? ~0ull : 0xffffffffffull; /* the large sizes: wide */
        uint64_t base = next();
        uint8_t *v = malloc(n * width);
        uint32_t *index = malloc(n * sizeof *index);
        if (!v || !index) return;
        int64_t bounds[2] = {INT64_MAX, INT64_MIN};
        /* half the rounds draw from a pool of an eighth as many values: few distinct ones over
         * a wide spread (the hash table's case, grown past its first 1 024 slots) */
        size_t npool = (round / 3) % 2 ? 1 + n / 8 : 0;
        uint64_t *pool = malloc((npool + 1) * sizeof *pool);
        if (!pool) return;
        for (size_t i = 0; i < npool; i++) pool[i] = base + (next() & mask);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = npool ? pool[next() % npool] : base + (next() & mask);
            if (i && next() % 3 == 0) x = value_at(v, next() % i, width, sign); /* a repeat */
            if (width == 4) {
                uint32_t x32 = (uint32_t)x;
                memcpy(v + i * 4, &x32, 4);
            } else {
                memcpy(v + i * 8, &x, 8);
            }
            int64_t s = (int64_t)value_at(v, i, width, true);
            bounds[0] = s < bounds[0] ? s : bounds[0];
            bounds[1] = s > bounds[1] ? s : bounds[1];
        }
        size_t nd = pq_dict_build(&o, v, n, width, sign, index, given ? bounds : NULL);
        CHECK(nd >= 1 && nd <= n);
        for (size_t i = 1; i < nd; i++)
            if (!in_order(value_at(o.entries, i - 1, width, sign), value_at(o.entries, i, width, sign), sign)) bad = 1;
        bool *used = calloc(nd ? nd : 1, 1);
        if (!used) return;
        for (size_t i = 0; i < n; i++) {
            if (index[i] >= nd || value_at(o.entries, index[i], width, sign) != value_at(v, i, width, sign)) {
                bad = 1;
                break;
            }
            used[index[i]] = true;
        }
        for (size_t i = 0; i < nd; i++)
            if (!used[i]) bad = 1; /* an entry no value has: not the distinct values */
        if (bad)
            fprintf(stderr, "dictionary build: round %d (n %zu, width %zu, sign %d, bounds %d) wrong\n", round, n,
                    width, sign, given);
        free(used);
        free(pool);
        free(v);
        free(index);
    }
    CHECK(!bad);
    pq_dict_order_free(&o);
}

/* A batch's INT64 values copied with their min and max (copy_minmax.h): the copy exact and
 * the bounds those of the values and the bounds given, for every length around the four-value
 * steps, extremes anywhere (first, last, in the tail), INT64_MIN and INT64_MAX. */
static void test_copy_minmax(void) {
    int bad = 0;
    int64_t src[80], dst[80];
    for (int round = 0; round < 2000 && !bad; round++) {
        size_t n = (size_t)round % 41;
        uint64_t mask = round % 3 ? 0xffff : ~0ull;
        for (size_t i = 0; i < n; i++) src[i] = (int64_t)((next() & mask) - (mask >> 1));
        if (n && round % 7 == 0) src[next() % n] = INT64_MIN;
        if (n && round % 11 == 0) src[next() % n] = INT64_MAX;
        int64_t lo = round % 2 ? 0 : INT64_MAX, hi = round % 2 ? 0 : INT64_MIN, want_lo = lo, want_hi = hi;
        for (size_t i = 0; i < n; i++) {
            want_lo = src[i] < want_lo ? src[i] : want_lo;
            want_hi = src[i] > want_hi ? src[i] : want_hi;
        }
        memset(dst, 0x5a, sizeof dst);
        pq_copy_minmax_i64(dst, src, n, &lo, &hi);
        if (lo != want_lo || hi != want_hi || (n && memcmp(dst, src, n * sizeof *src) != 0) || dst[n] != 0x5a5a5a5a5a5a5a5a) {
            fprintf(stderr, "copy_minmax: round %d (n %zu) wrong\n", round, n);
            bad = 1;
        }
    }
    CHECK(!bad);
}

int main(void) {
    test_rle_examples();
    test_rle_random();
    test_thrift_bytes();
    test_file_frame();
    test_misuse();
    test_dict_build();
    test_copy_minmax();
    return d9t_summary("test_parquet_encodings");
}
