/* Decoder tests: round trips of every field type through the encoder, the golden vector of
 * the format reference, streams, resets, pools, annotations, errors, truncation at every
 * offset, corrupted and random input, and every input kind (memory, path, fd, FILE*, gzip). */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "check.h"
#include "test_rng.h"
#include "test_vectors.h"
#include "format/decoder.h"
#include "format/encoder.h"
#include "format/schemas.h"
#include "format/wire.h"

/* ---- helpers ---- */

typedef struct result {
    uint64_t events;
    d9_dec_status status;
    char msg[600];
    d9_dec_stats st;
    uint64_t stop;
} result;

/* Decode everything from an opened decoder, then close it. */
static result drain(d9_decoder *d) {
    result r = {0};
    d9_event ev;
    int rc;
    while ((rc = d9_dec_next(d, &ev)) > 0) r.events++;
    r.status = d9_dec_state(d);
    snprintf(r.msg, sizeof r.msg, "%s", d9_dec_message(d));
    r.st = *d9_dec_get_stats(d);
    r.stop = d9_dec_stop_offset(d);
    /* once finished it stays finished */
    CHECK(d9_dec_next(d, &ev) == rc);
    d9_dec_close(d);
    return r;
}

static result decode_mem(const void *p, size_t n) {
    d9_decoder *d = d9_dec_open_mem(p, n, NULL, NULL, 0);
    CHECK(d != NULL);
    return drain(d);
}

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static d9_buf gzip_bytes(const uint8_t *p, size_t n) {
    d9_buf out;
    d9_buf_init(&out);
    z_stream zs = {0};
    CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    uint8_t *dst = d9_buf_reserve(&out, deflateBound(&zs, n));
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    zs.next_out = dst;
    zs.avail_out = (uInt)deflateBound(&zs, n);
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    out.len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

/* One zstd frame with its checksum, as the recorder's compress step writes. */
static d9_buf zstd_bytes(const uint8_t *p, size_t n) {
    d9_buf out;
    d9_buf_init(&out);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    CHECK(c && !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)));
    size_t cap = ZSTD_compressBound(n);
    uint8_t *dst = d9_buf_reserve(&out, cap);
    size_t got = ZSTD_compress2(c, dst, cap, p, n);
    CHECK(!ZSTD_isError(got));
    out.len = ZSTD_isError(got) ? 0 : got;
    ZSTD_freeCCtx(c);
    return out;
}

static char *write_temp(const void *p, size_t n) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/d9_test_decoder_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, p, n) == (ssize_t)n);
    close(fd);
    return path;
}

static const d9_schema_def *builtin(int id) { return &d9_builtin_schemas[id]; }

/* ---- the worked example of the format reference (tests/vectors/worked-example.bin) ---- */

/* A file of two compressed members of the same 20-event, 2-stream trace (`plain` bytes
 * each), read in 33-byte pieces: both members, every event, the sizes counted. */
static result read_two_members(d9_buf file, size_t plain) {
    char *path = write_temp(file.data, file.len);
    d9_dec_options opt;
    d9_dec_options_init(&opt);
    opt.chunk_bytes = 33;
    result r = drain(d9_dec_open_path(path, &opt, NULL, 0));
    CHECK(r.status == D9_DEC_END);
    CHECK_EQ_U64(r.events, 40);
    CHECK_EQ_U64(r.st.streams, 4);
    CHECK_EQ_U64(r.st.bytes, 2 * plain);
    CHECK_EQ_U64(r.st.input_bytes, file.len);
    unlink(path);
    return r;
}

static void test_golden_vector(void) {
    size_t golden_len = 0;
    uint8_t *golden = d9t_read_vector("worked-example", &golden_len);
    CHECK(golden && golden_len == 60);
    if (!golden || golden_len != 60) return;
    d9_decoder *d = d9_dec_open_mem(golden, golden_len, NULL, NULL, 0);
    d9_event ev;
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK_STR(ev.schema->name, "PollEndEvent");
    CHECK(ev.schema->has_timestamp);
    CHECK_EQ_U64(ev.schema->field_count, 1);
    CHECK_STR(ev.schema->fields[0].name, "worker_id");
    CHECK_EQ_U64(ev.schema->fields[0].type, D9_FT_VARINT);
    CHECK_EQ_U64(ev.type_id, 0);
    CHECK_EQ_U64(ev.ts_ns, 1000000000);
    CHECK_EQ_U64(ev.values[0].u, 3);
    CHECK_EQ_U64(ev.offset, 46);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK_EQ_U64(ev.ts_ns, 1000001500);
    uint64_t w = 0;
    CHECK(d9_value_uint(d9_event_field(&ev, "worker_id"), &w) && w == 3);
    CHECK(d9_event_field(&ev, "nope") == NULL);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 0);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    CHECK_STR(d9_dec_message(d), "");
    const d9_dec_stats *st = d9_dec_get_stats(d);
    CHECK_EQ_U64(st->events, 2);
    CHECK_EQ_U64(st->streams, 1);
    CHECK_EQ_U64(st->schema_frames, 1);
    CHECK_EQ_U64(st->timestamp_resets, 1);
    CHECK_EQ_U64(st->bytes, 60);
    d9_dec_close(d);

    /* the encoder writes exactly these bytes */
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 0, builtin(D9_SCH_POLL_END));
    d9_enc_event(&b, &ss, 0, 1000000000);
    d9_put_varint(&b, 3);
    d9_enc_event(&b, &ss, 0, 1000001500);
    d9_put_varint(&b, 3);
    CHECK_EQ_U64(b.len, 60);
    CHECK(b.len == 60 && memcmp(b.data, golden, 60) == 0);
    d9_buf_free(&b);
    free(golden);
}

/* ---- every field type ---- */

static const d9_schema_field all_fields[] = {
    {"i64", D9_FT_I64},        {"f64", D9_FT_F64},
    {"flag", D9_FT_BOOL},      {"text", D9_FT_STRING},
    {"blob", D9_FT_BYTES},     {"pstack", D9_FT_POOLED_STACK},
    {"pstr", D9_FT_POOLED_STRING}, {"stack", D9_FT_STACK},
    {"vint", D9_FT_VARINT},    {"smap", D9_FT_STRING_MAP},
    {"u8", D9_FT_U8},          {"u16", D9_FT_U16},
    {"u32", D9_FT_U32},        {"dlist", D9_FT_DYN_LIST},
    {"dmap", D9_FT_DYN_MAP},
    {"opt_vint", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"opt_pstr", D9_FT_OPTIONAL | D9_FT_POOLED_STRING},
    {"opt_i64", D9_FT_OPTIONAL | D9_FT_I64},
    {"opt_text", D9_FT_OPTIONAL | D9_FT_STRING},
};
static const d9_schema_def all_def = {"AllTypes", true, sizeof all_fields / sizeof all_fields[0],
                                      all_fields};

static const uint64_t stack_a[] = {0xffffffff81a28b97ull, 0x55dc0d63cc08ull, 1};
static const char weird[] = "a\"b\\c\n\x01\xff\xc3\xa9 end";

/* Appends the AllTypes field values; `present` chooses the optional fields. */
static void put_all_values(d9_buf *b, bool present) {
    d9_put_u64(b, (uint64_t)INT64_MIN);
    double f = -3.25;
    uint64_t fb;
    memcpy(&fb, &f, 8);
    d9_put_u64(b, fb);
    d9_put_u8(b, 7); /* any nonzero is true */
    d9_put_lstring(b, weird, sizeof weird - 1);
    uint8_t bytes[256];
    for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i;
    d9_put_lstring(b, (const char *)bytes, 256);
    d9_put_u32(b, 9);  /* stack pool id */
    d9_put_u32(b, 2);  /* string pool id */
    d9_put_u32(b, 3);  /* inline stack */
    for (int i = 0; i < 3; i++) d9_put_u64(b, stack_a[i]);
    d9_put_varint(b, UINT64_MAX);
    d9_pool_frame m;
    d9_enc_string_map_begin(b, &m);
    d9_enc_string_map_entry(b, &m, "service", "svc");
    d9_enc_string_map_entry(b, &m, "", "empty key");
    d9_enc_string_map_end(b, &m);
    d9_put_u8(b, 255);
    d9_put_u16(b, 65535);
    d9_put_u32(b, 0xffffffffu);
    /* DynamicList: [Varint 7, String "x", Bool true, DynamicList [U8 1], optional U16 absent] */
    d9_put_u32(b, 5);
    d9_put_u8(b, D9_FT_VARINT); d9_put_varint(b, 7);
    d9_put_u8(b, D9_FT_STRING); d9_put_lstring(b, "x", 1);
    d9_put_u8(b, D9_FT_BOOL); d9_put_u8(b, 1);
    d9_put_u8(b, D9_FT_DYN_LIST); d9_put_u32(b, 1); d9_put_u8(b, D9_FT_U8); d9_put_u8(b, 1);
    d9_put_u8(b, D9_FT_OPTIONAL | D9_FT_U16); d9_put_u8(b, 0);
    /* DynamicMap: {String "k": I64 -1, PooledString #2: F64 0.5} */
    d9_put_u32(b, 2);
    d9_put_u8(b, D9_FT_STRING); d9_put_lstring(b, "k", 1);
    d9_put_u8(b, D9_FT_I64); d9_put_u64(b, (uint64_t)-1);
    d9_put_u8(b, D9_FT_POOLED_STRING); d9_put_u32(b, 2);
    double half = 0.5;
    memcpy(&fb, &half, 8);
    d9_put_u8(b, D9_FT_F64); d9_put_u64(b, fb);
    /* optionals */
    if (present) {
        d9_put_u8(b, 1); d9_put_varint(b, 300);
        d9_put_u8(b, 1); d9_put_u32(b, 2);
        d9_put_u8(b, 1); d9_put_u64(b, 42);
        d9_put_u8(b, 1); d9_put_lstring(b, "", 0);
    } else {
        for (int i = 0; i < 4; i++) d9_put_u8(b, 0);
    }
}

static void build_all_types(d9_buf *b) {
    d9_stream_state ss;
    d9_enc_header(b, &ss);
    d9_enc_schema(b, 7, &all_def);
    d9_pool_frame pf;
    d9_enc_string_pool_begin(b, &pf);
    d9_enc_string_pool_entry(b, &pf, 1, "one", 3);
    d9_enc_string_pool_entry(b, &pf, 2, "src/main.c:10:3", 15);
    d9_enc_pool_end(b, &pf);
    d9_enc_stack_pool_begin(b, &pf);
    d9_enc_stack_pool_entry(b, &pf, 9, stack_a, 3);
    d9_enc_stack_pool_entry(b, &pf, 10, stack_a, 1);
    d9_enc_pool_end(b, &pf);
    d9_enc_event(b, &ss, 7, 5000);
    put_all_values(b, true);
    d9_enc_event(b, &ss, 7, 6000);
    put_all_values(b, false);
}

static void check_all_values(const d9_event *ev, bool present) {
    const d9_value *v = ev->values;
    CHECK_STR(ev->schema->name, "AllTypes");
    CHECK_EQ_U64(ev->schema->field_count, sizeof all_fields / sizeof all_fields[0]);
    for (uint32_t i = 0; i < ev->schema->field_count; i++) {
        CHECK_STR(ev->schema->fields[i].name, all_fields[i].name);
        CHECK_EQ_U64(ev->schema->fields[i].type, all_fields[i].type & 0x7f);
        CHECK(ev->schema->fields[i].optional == ((all_fields[i].type & 0x80) != 0));
        CHECK_EQ_U64(v[i].type, all_fields[i].type & 0x7f);
    }
    CHECK(v[0].i == INT64_MIN);
    CHECK(v[1].f == -3.25);
    CHECK_EQ_U64(v[2].u, 1);
    CHECK_EQ_U64(v[3].str.len, sizeof weird - 1);
    CHECK(memcmp(v[3].str.ptr, weird, sizeof weird - 1) == 0);
    CHECK_EQ_U64(v[4].str.len, 256);
    bool bytes_ok = v[4].str.len == 256;
    for (int i = 0; bytes_ok && i < 256; i++) bytes_ok = (uint8_t)v[4].str.ptr[i] == i;
    CHECK(bytes_ok);
    CHECK(v[5].resolved);
    CHECK_EQ_U64(v[5].pool_id, 9);
    CHECK_EQ_U64(v[5].stack.count, 3);
    CHECK(v[5].stack.count == 3 && memcmp(v[5].stack.addrs, stack_a, sizeof stack_a) == 0);
    CHECK(v[6].resolved);
    CHECK_EQ_U64(v[6].pool_id, 2);
    CHECK(v[6].str.len == 15 && memcmp(v[6].str.ptr, "src/main.c:10:3", 15) == 0);
    CHECK_EQ_U64(v[7].stack.count, 3);
    CHECK(v[7].stack.count == 3 && v[7].stack.addrs[0] == stack_a[0] && v[7].stack.addrs[2] == 1);
    CHECK(v[8].u == UINT64_MAX);
    CHECK_EQ_U64(v[9].map.count, 2);
    CHECK(v[9].map.count == 2 && v[9].map.items[0].key.len == 7 &&
          memcmp(v[9].map.items[0].key.ptr, "service", 7) == 0 &&
          memcmp(v[9].map.items[0].value.ptr, "svc", 3) == 0 && v[9].map.items[1].key.len == 0 &&
          v[9].map.items[1].value.len == 9);
    CHECK_EQ_U64(v[10].u, 255);
    CHECK_EQ_U64(v[11].u, 65535);
    CHECK_EQ_U64(v[12].u, 0xffffffffu);
    const d9_value *l = v[13].list.items;
    CHECK_EQ_U64(v[13].list.count, 5);
    if (v[13].list.count == 5) {
        CHECK(l[0].type == D9_FT_VARINT && l[0].u == 7);
        CHECK(l[1].type == D9_FT_STRING && l[1].str.len == 1 && l[1].str.ptr[0] == 'x');
        CHECK(l[2].type == D9_FT_BOOL && l[2].u == 1);
        CHECK(l[3].type == D9_FT_DYN_LIST && l[3].list.count == 1 && l[3].list.items[0].u == 1);
        CHECK(l[4].type == D9_FT_U16 && !l[4].present);
    }
    const d9_value *m = v[14].list.items;
    CHECK_EQ_U64(v[14].list.count, 2);
    if (v[14].list.count == 2) {
        CHECK(m[0].type == D9_FT_STRING && m[0].str.len == 1 && m[0].str.ptr[0] == 'k');
        CHECK(m[1].type == D9_FT_I64 && m[1].i == -1);
        CHECK(m[2].type == D9_FT_POOLED_STRING && m[2].resolved && m[2].str.len == 15);
        CHECK(m[3].type == D9_FT_F64 && m[3].f == 0.5);
    }
    CHECK(v[15].present == present);
    CHECK(v[16].present == present);
    CHECK(v[17].present == present);
    CHECK(v[18].present == present);
    if (present) {
        CHECK_EQ_U64(v[15].u, 300);
        CHECK(v[16].str.len == 15);
        CHECK(v[17].i == 42);
        CHECK_EQ_U64(v[18].str.len, 0);
    } else {
        uint64_t x;
        CHECK(!d9_value_uint(&v[15], &x));
    }
}

static void test_all_types_round_trip(void) {
    d9_buf b;
    d9_buf_init(&b);
    build_all_types(&b);
    CHECK(!b.failed);
    d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    d9_event ev;
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK_EQ_U64(ev.ts_ns, 5000);
    CHECK_EQ_U64(ev.type_id, 7);
    CHECK_EQ_U64(ev.schema->first_type_id, 7);
    check_all_values(&ev, true);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK_EQ_U64(ev.ts_ns, 6000);
    check_all_values(&ev, false);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 0);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    const d9_dec_stats *st = d9_dec_get_stats(d);
    CHECK_EQ_U64(st->string_pool_frames, 1);
    CHECK_EQ_U64(st->string_pool_entries, 2);
    CHECK_EQ_U64(st->stack_pool_frames, 1);
    CHECK_EQ_U64(st->stack_pool_entries, 2);
    CHECK_EQ_U64(st->unresolved_refs, 0);
    const uint64_t *addrs;
    uint32_t n;
    CHECK(d9_dec_pool_stack(d, 10, &addrs, &n) && n == 1 && addrs[0] == stack_a[0]);
    d9_dec_str s;
    CHECK(d9_dec_pool_string(d, 1, &s) && s.len == 3 && strcmp(s.ptr, "one") == 0);
    CHECK(!d9_dec_pool_string(d, 3, &s));
    CHECK_STR(d9_field_type_name(D9_FT_DYN_MAP), "DynamicMap");
    CHECK_STR(d9_field_type_name(0), "?");
    d9_dec_close(d);

    /* the same bytes through every input path, with tiny chunks to cross every boundary */
    char *path = write_temp(b.data, b.len);
    for (size_t chunk = 1; chunk <= 64; chunk = chunk < 8 ? chunk + 1 : chunk * 2) {
        d9_dec_options opt;
        d9_dec_options_init(&opt);
        opt.chunk_bytes = chunk;
        d9_decoder *fd = d9_dec_open_path(path, &opt, NULL, 0);
        CHECK(fd != NULL);
        int k = 0;
        while (fd && d9_dec_next(fd, &ev) > 0) check_all_values(&ev, k++ == 0);
        CHECK_EQ_U64(k, 2);
        CHECK(fd && d9_dec_state(fd) == D9_DEC_END);
        CHECK(fd && d9_dec_get_stats(fd)->bytes == b.len);
        d9_dec_close(fd);
    }
    d9_buf gz = gzip_bytes(b.data, b.len);
    d9_decoder *gd = d9_dec_open_mem(gz.data, gz.len, NULL, NULL, 0);
    int k = 0;
    while (d9_dec_next(gd, &ev) > 0) check_all_values(&ev, k++ == 0);
    CHECK_EQ_U64(k, 2);
    CHECK(d9_dec_state(gd) == D9_DEC_END);
    CHECK(d9_dec_get_stats(gd)->gzip);
    CHECK_EQ_U64(d9_dec_get_stats(gd)->input_bytes, gz.len);
    d9_dec_close(gd);
    unlink(path);
    d9_buf_free(&gz);
    d9_buf_free(&b);
}

/* ---- streams, resets, schemas ---- */

static void test_concatenated_streams(void) {
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_pool_frame pf;
    /* stream 0: type 0 = PollStartEvent, pool id 1 = "first" */
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 0, builtin(D9_SCH_POLL_START));
    d9_enc_string_pool_begin(&b, &pf);
    d9_enc_string_pool_entry(&b, &pf, 1, "first", 5);
    d9_enc_pool_end(&b, &pf);
    d9_enc_event(&b, &ss, 0, 50000000);
    d9_put_varint(&b, 1); d9_put_u8(&b, 0); d9_put_varint(&b, 10); d9_put_u32(&b, 1);
    /* stream 1: type 0 = TaskTerminateEvent, type 1 = PollStartEvent, pool id 1 = "second" */
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 0, builtin(D9_SCH_TASK_TERMINATE));
    d9_enc_schema(&b, 1, builtin(D9_SCH_POLL_START));
    d9_enc_string_pool_begin(&b, &pf);
    d9_enc_string_pool_entry(&b, &pf, 1, "second", 6);
    d9_enc_pool_end(&b, &pf);
    d9_enc_event(&b, &ss, 0, 1000); /* base restarted at 0: no reset needed */
    d9_put_varint(&b, 99);
    d9_enc_event(&b, &ss, 1, 2000);
    d9_put_varint(&b, 2); d9_put_u8(&b, 0); d9_put_varint(&b, 11); d9_put_u32(&b, 1);

    d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    d9_event ev;
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    const d9_dec_schema *poll = ev.schema;
    CHECK_STR(poll->name, "PollStartEvent");
    CHECK_EQ_U64(ev.stream, 0);
    CHECK_EQ_U64(ev.ts_ns, 50000000);
    CHECK(ev.values[3].str.len == 5 && memcmp(ev.values[3].str.ptr, "first", 5) == 0);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK_STR(ev.schema->name, "TaskTerminateEvent");
    CHECK_EQ_U64(ev.stream, 1);
    CHECK_EQ_U64(ev.type_id, 0);
    CHECK_EQ_U64(ev.ts_ns, 1000);
    CHECK_EQ_U64(ev.values[0].u, 99);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK(ev.schema == poll); /* interned: one schema for both streams */
    CHECK_EQ_U64(ev.type_id, 1);
    CHECK_EQ_U64(ev.ts_ns, 2000);
    CHECK(ev.values[3].str.len == 6 && memcmp(ev.values[3].str.ptr, "second", 6) == 0);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 0);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    CHECK_EQ_U64(d9_dec_get_stats(d)->streams, 2);
    CHECK_EQ_U64(d9_dec_get_stats(d)->schema_frames, 3);
    CHECK_EQ_U64(d9_dec_schema_count(d), 2);
    CHECK(d9_dec_schema_at(d, 0) == poll && poll->index == 0);
    CHECK(d9_dec_schema_at(d, 2) == NULL);
    d9_dec_close(d);

    /* a stream's type ids are its own: stream 1 without schemas cannot use stream 0's */
    d9_buf_clear(&b);
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 0, builtin(D9_SCH_POLL_END));
    d9_enc_event(&b, &ss, 0, 10);
    d9_put_varint(&b, 1);
    size_t second = b.len;
    d9_enc_header(&b, &ss);
    d9_enc_event(&b, &ss, 0, 20);
    d9_put_varint(&b, 1);
    result r = decode_mem(b.data, b.len);
    CHECK_EQ_U64(r.events, 1);
    CHECK(r.status == D9_DEC_DAMAGED);
    CHECK(contains(r.msg, "undefined type id 0"));
    CHECK(contains(r.msg, "stream 1"));
    CHECK_EQ_U64(r.st.first_damage_offset, second + D9_HEADER_SIZE);
    d9_buf_free(&b);
}

/* Varints of every length, at both ends of each (2^7k - 1 and 2^7k), read by a bounded
 * event's plan (d9_dec_next's read-ahead and d9_dec_next_run step through one, two, three,
 * four and five bytes, then loop) as the generic reader reads them; an 11-byte varint is damage. */
static void test_varint_lengths(void) {
    uint64_t want[24];
    size_t n = 0;
    want[n++] = 0;
    for (unsigned k = 1; k < 10; k++) {
        want[n++] = ((uint64_t)1 << (7 * k)) - 1;
        want[n++] = (uint64_t)1 << (7 * k);
    }
    want[n++] = UINT64_MAX;
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 3, builtin(D9_SCH_POLL_END));
    for (size_t i = 0; i < n; i++) {
        d9_enc_event(&b, &ss, 3, 100 + i);
        d9_put_varint(&b, want[i]);
    }
    for (int runs = 0; runs < 2; runs++) {
        d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
        d9_event ev[32];
        d9_value vals[32];
        size_t k = 0, by_run = 0;
        for (;;) {
            int got = runs ? d9_dec_next_run(d, ev, 32, vals, 32) : 0;
            by_run += got > 0 ? (size_t)got : 0;
            if (got <= 0) got = d9_dec_next(d, ev) > 0;
            if (got <= 0) break;
            for (int i = 0; i < got; i++, k++) CHECK(k < n && ev[i].values[0].u == want[k]);
        }
        CHECK_EQ_U64(k, n);
        CHECK(!runs || by_run > n / 2);
        CHECK(d9_dec_state(d) == D9_DEC_END);
        d9_dec_close(d);
    }
    /* eleven bytes: too long for 64 bits, damage (the plan stops, the generic reader says so) */
    d9_buf_clear(&b);
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 3, builtin(D9_SCH_POLL_END));
    d9_enc_event(&b, &ss, 3, 100);
    for (int i = 0; i < 10; i++) d9_put_u8(&b, 0x80);
    d9_put_u8(&b, 1);
    result r = decode_mem(b.data, b.len);
    CHECK_EQ_U64(r.events, 0);
    CHECK(r.status == D9_DEC_DAMAGED || r.status == D9_DEC_ERROR);
    d9_buf_free(&b);
}

static void test_timestamp_resets(void) {
    static const uint64_t ts[] = {5,        16777221, 16777221, 100,     (1ull << 40) + 7,
                                  (1ull << 40) + 16777215 + 7, UINT64_MAX - 1, 0};
    size_t n = sizeof ts / sizeof ts[0];
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 3, builtin(D9_SCH_POLL_END));
    for (size_t i = 0; i < n; i++) {
        d9_enc_event(&b, &ss, 3, ts[i]);
        d9_put_varint(&b, i);
    }
    d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    d9_event ev;
    size_t k = 0;
    while (d9_dec_next(d, &ev) > 0) {
        CHECK(k < n && ev.ts_ns == ts[k] && ev.values[0].u == k);
        k++;
    }
    CHECK_EQ_U64(k, n);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    /* 16777221 (delta > u24), 100 (backwards), 2^40+7, UINT64_MAX-1, 0 (backwards) */
    CHECK_EQ_U64(d9_dec_get_stats(d)->timestamp_resets, 5);
    d9_dec_close(d);

    /* untimed events carry no delta and leave the base alone */
    static const d9_schema_field f[] = {{"x", D9_FT_VARINT}};
    static const d9_schema_def untimed = {"Untimed", false, 1, f};
    d9_buf_clear(&b);
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 0, &untimed);
    d9_enc_schema(&b, 1, builtin(D9_SCH_POLL_END));
    d9_enc_event(&b, &ss, 1, 1000);
    d9_put_varint(&b, 0);
    d9_enc_event_untimed(&b, 0);
    d9_put_varint(&b, 77);
    d9_enc_event(&b, &ss, 1, 1010);
    d9_put_varint(&b, 0);
    d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK(!ev.schema->has_timestamp);
    CHECK_EQ_U64(ev.ts_ns, 0);
    CHECK_EQ_U64(ev.values[0].u, 77);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK_EQ_U64(ev.ts_ns, 1010);
    d9_dec_close(d);
    d9_buf_free(&b);
}

static void test_schema_reregistration(void) {
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 4, builtin(D9_SCH_POLL_END));
    d9_enc_schema(&b, 4, builtin(D9_SCH_POLL_END)); /* identical: fine */
    d9_enc_event(&b, &ss, 4, 1);
    d9_put_varint(&b, 1);
    result r = decode_mem(b.data, b.len);
    CHECK(r.status == D9_DEC_END);
    CHECK_EQ_U64(r.events, 1);
    CHECK_EQ_U64(r.st.schema_frames, 2);

    size_t bad = b.len;
    d9_enc_schema(&b, 4, builtin(D9_SCH_TASK_TERMINATE)); /* different: error */
    d9_enc_event(&b, &ss, 4, 2);
    d9_put_varint(&b, 1);
    r = decode_mem(b.data, b.len);
    CHECK(r.status == D9_DEC_DAMAGED);
    CHECK_EQ_U64(r.events, 1);
    CHECK_EQ_U64(r.st.first_damage_offset, bad);
    CHECK(contains(r.msg, "different schema"));
    CHECK(contains(r.msg, "type id 4"));
    d9_buf_free(&b);
}

/* ---- pools ---- */

static void test_pools(void) {
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_pool_frame pf;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 0, builtin(D9_SCH_TASK_SPAWN));
    d9_enc_schema(&b, 1, builtin(D9_SCH_TASK_DUMP));
    /* one frame, many entries; sparse and large ids */
    d9_enc_string_pool_begin(&b, &pf);
    char name[32];
    for (uint32_t i = 0; i < 500; i++) {
        int n = snprintf(name, sizeof name, "loc%u", i);
        d9_enc_string_pool_entry(&b, &pf, i * 7919u + (i == 499 ? 0xfffff000u : 0), name, (size_t)n);
    }
    d9_enc_pool_end(&b, &pf);
    uint64_t frames[40];
    for (int i = 0; i < 40; i++) frames[i] = 0x1000u + (uint64_t)i;
    d9_enc_stack_pool_begin(&b, &pf);
    for (uint32_t i = 0; i < 40; i++) d9_enc_stack_pool_entry(&b, &pf, 100 + i, frames, i);
    d9_enc_pool_end(&b, &pf);
    for (uint32_t i = 0; i < 500; i++) {
        d9_enc_event(&b, &ss, 0, 1000 + i);
        d9_put_varint(&b, i);
        d9_put_u32(&b, i * 7919u + (i == 499 ? 0xfffff000u : 0));
        d9_put_u8(&b, 0);
    }
    for (uint32_t i = 0; i < 40; i++) {
        d9_enc_event(&b, &ss, 1, 5000 + i);
        d9_put_varint(&b, i);
        d9_put_u32(&b, 100 + i);
    }
    /* redefining an id replaces it */
    d9_enc_string_pool_begin(&b, &pf);
    d9_enc_string_pool_entry(&b, &pf, 0, "replaced", 8);
    d9_enc_pool_end(&b, &pf);
    d9_enc_event(&b, &ss, 0, 9000);
    d9_put_varint(&b, 0); d9_put_u32(&b, 0); d9_put_u8(&b, 1);

    d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    d9_event ev;
    bool ok = true;
    for (uint32_t i = 0; i < 500; i++) {
        ok &= d9_dec_next(d, &ev) == 1;
        int n = snprintf(name, sizeof name, "loc%u", i);
        d9_dec_str s;
        ok &= d9_value_str(&ev.values[1], &s) && s.len == (uint32_t)n && memcmp(s.ptr, name, (size_t)n) == 0;
        ok &= ev.values[1].str.ptr[n] == '\0'; /* pooled strings are NUL-terminated */
    }
    CHECK(ok);
    for (uint32_t i = 0; i < 40; i++) {
        ok &= d9_dec_next(d, &ev) == 1;
        ok &= ev.values[1].resolved && ev.values[1].stack.count == i;
        for (uint32_t k = 0; k < i; k++) ok &= ev.values[1].stack.addrs[k] == 0x1000u + k;
    }
    CHECK(ok);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK(ev.values[1].str.len == 8 && memcmp(ev.values[1].str.ptr, "replaced", 8) == 0);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 0);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    CHECK_EQ_U64(d9_dec_get_stats(d)->string_pool_entries, 501);
    CHECK_EQ_U64(d9_dec_get_stats(d)->stack_pool_entries, 40);
    d9_dec_close(d);
    d9_buf_free(&b);
}

static void test_lazy_pool_references(void) {
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_pool_frame pf;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 0, builtin(D9_SCH_TASK_DUMP));
    d9_enc_schema(&b, 1, builtin(D9_SCH_TASK_SPAWN));
    d9_enc_event(&b, &ss, 1, 10); /* string #5 before its definition */
    d9_put_varint(&b, 1); d9_put_u32(&b, 5); d9_put_u8(&b, 0);
    d9_enc_event(&b, &ss, 0, 20); /* stack #6 before its definition */
    d9_put_varint(&b, 1); d9_put_u32(&b, 6);
    d9_enc_string_pool_begin(&b, &pf);
    d9_enc_string_pool_entry(&b, &pf, 5, "late", 4);
    d9_enc_pool_end(&b, &pf);
    uint64_t fr[2] = {0xabc, 0xdef};
    d9_enc_stack_pool_begin(&b, &pf);
    d9_enc_stack_pool_entry(&b, &pf, 6, fr, 2);
    d9_enc_pool_end(&b, &pf);
    d9_enc_event(&b, &ss, 1, 30);
    d9_put_varint(&b, 1); d9_put_u32(&b, 5); d9_put_u8(&b, 0);

    d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    d9_event ev;
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK(!ev.values[1].resolved && ev.values[1].pool_id == 5 && ev.values[1].str.len == 0);
    d9_dec_str s;
    CHECK(!d9_value_str(&ev.values[1], &s));
    CHECK(!d9_dec_pool_string(d, 5, &s));
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK(!ev.values[1].resolved && ev.values[1].pool_id == 6 && ev.values[1].stack.count == 0);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    CHECK(ev.values[1].resolved && ev.values[1].str.len == 4);
    /* the earlier references can be resolved now */
    CHECK(d9_dec_pool_string(d, 5, &s) && s.len == 4 && memcmp(s.ptr, "late", 4) == 0);
    const uint64_t *a;
    uint32_t n;
    CHECK(d9_dec_pool_stack(d, 6, &a, &n) && n == 2 && a[1] == 0xdef);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 0);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    CHECK_EQ_U64(d9_dec_get_stats(d)->unresolved_refs, 2);
    CHECK_EQ_U64(d9_dec_get_stats(d)->late_definitions, 2);
    CHECK_EQ_U64(d9_dec_get_stats(d)->undefined_pool_ids, 0);
    d9_dec_close(d);

    /* a reference never defined in its stream is counted (the next stream cannot define it) */
    d9_buf_clear(&b);
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 1, builtin(D9_SCH_TASK_SPAWN));
    d9_enc_event(&b, &ss, 1, 10);
    d9_put_varint(&b, 1); d9_put_u32(&b, 77); d9_put_u8(&b, 0);
    d9_enc_event(&b, &ss, 1, 11);
    d9_put_varint(&b, 2); d9_put_u32(&b, 77); d9_put_u8(&b, 0);
    d9_enc_header(&b, &ss);
    d9_enc_string_pool_begin(&b, &pf);
    d9_enc_string_pool_entry(&b, &pf, 77, "other stream", 12);
    d9_enc_pool_end(&b, &pf);
    result r = decode_mem(b.data, b.len);
    CHECK(r.status == D9_DEC_END);
    CHECK_EQ_U64(r.events, 2);
    CHECK_EQ_U64(r.st.unresolved_refs, 2);
    CHECK_EQ_U64(r.st.undefined_pool_ids, 1);
    CHECK_EQ_U64(r.st.late_definitions, 0);
    d9_buf_free(&b);
}

/* ---- annotations ---- */

static void put_annotation(d9_buf *b, uint16_t field, const char *k, const char *v) {
    d9_put_u16(b, field);
    d9_put_u16(b, (uint16_t)strlen(k));
    d9_put_bytes(b, k, strlen(k));
    d9_put_u32(b, (uint32_t)strlen(v));
    d9_put_bytes(b, v, strlen(v));
}

static void test_annotations(void) {
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 300, builtin(D9_SCH_WORKER_PARK));
    d9_put_u8(&b, D9_FRAME_ANNOTATIONS);
    d9_put_varint(&b, 300); /* two varint bytes */
    d9_put_u16(&b, 3);
    put_annotation(&b, 2, "metrique.unit", "ns");
    put_annotation(&b, 2, "other", "x");
    put_annotation(&b, 99, "metrique.unit", "ignored: no such field");
    d9_put_u8(&b, D9_FRAME_ANNOTATIONS); /* unknown type id: ignored */
    d9_put_varint(&b, 9);
    d9_put_u16(&b, 1);
    put_annotation(&b, 0, "k", "v");
    d9_put_u8(&b, D9_FRAME_ANNOTATIONS); /* a later frame replaces a value */
    d9_put_varint(&b, 300);
    d9_put_u16(&b, 1);
    put_annotation(&b, 2, "other", "y");
    d9_enc_event(&b, &ss, 300, 10);
    d9_put_varint(&b, 0); d9_put_u8(&b, 0); d9_put_varint(&b, 123); d9_put_u32(&b, 55);

    d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    d9_event ev;
    CHECK_EQ_U64(d9_dec_next(d, &ev), 1);
    int cpu = d9_schema_field_index(ev.schema, "cpu_time_ns");
    CHECK_EQ_U64(cpu, 2);
    CHECK_STR(d9_schema_annotation(ev.schema, cpu, "metrique.unit"), "ns");
    CHECK_STR(d9_schema_annotation(ev.schema, cpu, "other"), "y");
    CHECK(d9_schema_annotation(ev.schema, 0, "metrique.unit") == NULL);
    CHECK(d9_schema_annotation(ev.schema, 50, "metrique.unit") == NULL);
    CHECK_EQ_U64(ev.schema->fields[2].annotation_count, 2);
    CHECK_EQ_U64(d9_dec_next(d, &ev), 0);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    CHECK_EQ_U64(d9_dec_get_stats(d)->annotation_frames, 3);
    d9_dec_close(d);
    d9_buf_free(&b);
}

/* ---- errors ---- */

typedef struct bad_case {
    const char *what;
    uint8_t bytes[48];
    size_t len;
    d9_dec_status status;
    const char *msg;
    uint64_t stop;
} bad_case;

#define HDR 0x54, 0x52, 0x43, 0x00, 0x01
/* schema type 0 "E", has_ts, one field "v" of type T */
#define SCHEMA1(T) 0x01, 0x00, 0x00, 0x01, 0x00, 'E', 0x01, 0x01, 0x00, 0x01, 0x00, 'v', (T)

static const bad_case bad_cases[] = {
    {"empty", {0}, 0, D9_DEC_END, "", 0},
    {"bad magic", {'P', 'K', 3, 4, 0, 0}, 6, D9_DEC_ERROR, "bad magic 50 4b 03 04", 0},
    {"bad magic, short", {'X'}, 1, D9_DEC_ERROR, "bad magic 58", 0},
    {"partial header", {0x54, 0x52, 0x43}, 3, D9_DEC_TRUNCATED, "incomplete stream header", 0},
    {"version 2", {0x54, 0x52, 0x43, 0x00, 0x02}, 5, D9_DEC_ERROR, "unsupported format version 2", 0},
    {"second header bad version", {HDR, 0x54, 0x52, 0x43, 0x00, 0x09}, 10, D9_DEC_DAMAGED,
     "unsupported format version 9", 5},
    {"broken second magic", {HDR, 0x54, 0x52, 0x44, 0x00, 0x01}, 10, D9_DEC_DAMAGED,
     "bad stream header", 5},
    {"unknown tag", {HDR, 0x07, 1, 2, 3}, 9, D9_DEC_DAMAGED, "unknown frame tag 0x07", 5},
    {"tag zero", {HDR, 0x00}, 6, D9_DEC_DAMAGED, "unknown frame tag 0x00", 5},
    {"bad field type 16", {HDR, SCHEMA1(0x10)}, 18, D9_DEC_DAMAGED, "unknown type 0x10", 5},
    {"bad field type 0", {HDR, SCHEMA1(0x00)}, 18, D9_DEC_DAMAGED, "unknown type 0x00", 5},
    {"bad optional type", {HDR, SCHEMA1(0x90)}, 18, D9_DEC_DAMAGED, "unknown type 0x90", 5},
    {"undefined type id", {HDR, 0x02, 0x05, 0x00, 0, 0, 0}, 11, D9_DEC_DAMAGED,
     "undefined type id 5", 5},
    {"bad presence byte", {HDR, SCHEMA1(0x89), 0x02, 0, 0, 0, 0, 0, 0x02}, 25, D9_DEC_DAMAGED,
     "bad presence byte 2", 18},
    {"varint overflow", {HDR, SCHEMA1(0x09), 0x02, 0, 0, 0, 0, 0,
                         0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 34,
     D9_DEC_DAMAGED, "varint does not fit", 18},
    {"field named in error", {HDR, SCHEMA1(0x0e), 0x02, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x33, 0},
     30, D9_DEC_DAMAGED, "E field 'v' (DynamicList): bad value type tag 0x33", 18},
    {"absurd string pool count", {HDR, 0x03, 0xff, 0xff, 0xff, 0xff}, 10, D9_DEC_DAMAGED,
     "any writer writes", 5},
    {"absurd string length", {HDR, 0x03, 0x01, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f}, 18,
     D9_DEC_DAMAGED, "any writer writes", 5},
    {"absurd stack frames", {HDR, 0x04, 0x01, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, 18,
     D9_DEC_DAMAGED, "any writer writes", 5},
    {"absurd dynamic list", {HDR, SCHEMA1(0x0e), 0x02, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
     28, D9_DEC_DAMAGED, "any writer writes", 18},
    {"short string pool entry", {HDR, 0x03, 0x01, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 'a', 'b'}, 20,
     D9_DEC_TRUNCATED, "incomplete string pool frame", 5},
    {"short reset", {HDR, 0x05, 1, 2, 3}, 9, D9_DEC_TRUNCATED, "incomplete timestamp reset", 5},
    {"short event", {HDR, SCHEMA1(0x0d), 0x02, 0, 0, 0, 0, 0, 1, 2}, 26, D9_DEC_TRUNCATED,
     "incomplete event frame", 18},
};

static void test_errors(void) {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        result r = decode_mem(c->bytes, c->len);
        /* damage is skipped to the end: where it starts is its first damage */
        uint64_t where = r.status == D9_DEC_DAMAGED ? r.st.first_damage_offset : r.stop;
        bool ok = r.status == c->status && contains(r.msg, c->msg) && where == c->stop &&
                  r.events == 0 && (r.status != D9_DEC_DAMAGED || r.stop == c->len);
        if (!ok)
            fprintf(stderr, "case '%s': status %d stop %" PRIu64 " msg '%s'\n", c->what,
                    (int)r.status, where, r.msg);
        CHECK(ok);
        char off[40];
        snprintf(off, sizeof off, "offset %" PRIu64 " ", c->stop);
        CHECK(c->status == D9_DEC_END || contains(r.msg, off));
    }
    /* a clear message with the stream index */
    result r = decode_mem((const uint8_t[]){HDR, HDR, 0x09}, 11);
    CHECK_STR(r.msg, "damaged at offset 10 (stream 1): unknown frame tag 0x09 (frames carry no "
                     "length: cannot go on); skipped 1 bytes to the end of the data (no stream "
                     "header after it)");
    CHECK_EQ_U64(r.st.streams, 2);
    CHECK_EQ_U64(r.st.damaged_regions, 1);
    CHECK_EQ_U64(r.st.damaged_bytes, 1);

    /* a frame larger than max_frame_bytes is refused when streamed */
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_pool_frame pf;
    d9_enc_header(&b, &ss);
    d9_enc_string_pool_begin(&b, &pf);
    char big[5000];
    memset(big, 'z', sizeof big);
    d9_enc_string_pool_entry(&b, &pf, 1, big, sizeof big);
    d9_enc_pool_end(&b, &pf);
    char *path = write_temp(b.data, b.len);
    d9_dec_options opt;
    d9_dec_options_init(&opt);
    opt.max_frame_bytes = 4096;
    opt.chunk_bytes = 1024;
    r = drain(d9_dec_open_path(path, &opt, NULL, 0));
    CHECK(r.status == D9_DEC_DAMAGED && contains(r.msg, "limit of 4096"));
    opt.max_frame_bytes = 8192; /* big enough: the buffer grows for this frame */
    r = drain(d9_dec_open_path(path, &opt, NULL, 0));
    CHECK(r.status == D9_DEC_END);
    CHECK_EQ_U64(r.st.string_pool_entries, 1);
    unlink(path);

    /* open errors */
    char err[256];
    CHECK(d9_dec_open_path("/nonexistent/trace.bin", NULL, err, sizeof err) == NULL);
    CHECK(contains(err, "/nonexistent/trace.bin") && contains(err, "No such file"));

    /* corrupt gzip: error; gzip cut short: truncated */
    d9_buf_clear(&b);
    build_all_types(&b);
    d9_buf gz = gzip_bytes(b.data, b.len);
    r = decode_mem(gz.data, gz.len / 2);
    CHECK(r.status == D9_DEC_TRUNCATED);
    CHECK(r.events < 2);
    gz.data[gz.len / 2] ^= 0x55;
    gz.data[gz.len / 2 + 1] ^= 0xaa;
    r = decode_mem(gz.data, gz.len);
    CHECK(r.status != D9_DEC_RUNNING);
    uint8_t gzhdr_only[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0x77, 0x77};
    r = decode_mem(gzhdr_only, sizeof gzhdr_only);
    CHECK(r.status == D9_DEC_ERROR || r.status == D9_DEC_TRUNCATED);
    d9_buf_free(&gz);
    d9_buf_free(&b);
}

/* ---- truncation, corruption, random input ---- */

/* A small trace with two streams, pools, and several kinds of frames. */
static void build_small(d9_buf *b) {
    d9_stream_state ss;
    d9_pool_frame pf;
    for (int s = 0; s < 2; s++) {
        d9_enc_header(b, &ss);
        d9_enc_schema(b, 0, builtin(D9_SCH_POLL_START));
        d9_enc_schema(b, 1, builtin(D9_SCH_POLL_END));
        d9_enc_schema(b, 2, builtin(D9_SCH_CPU_SAMPLE));
        d9_enc_schema(b, 3, builtin(D9_SCH_SEGMENT_METADATA));
        d9_enc_string_pool_begin(b, &pf);
        d9_enc_string_pool_entry(b, &pf, 1, "a.c:1:1", 7);
        d9_enc_string_pool_entry(b, &pf, 2, "worker", 6);
        d9_enc_pool_end(b, &pf);
        uint64_t fr[3] = {0x401000, 0x401234, 0x7fff0000};
        d9_enc_stack_pool_begin(b, &pf);
        d9_enc_stack_pool_entry(b, &pf, 1, fr, 3);
        d9_enc_pool_end(b, &pf);
        d9_enc_event(b, &ss, 3, 100);
        d9_pool_frame m;
        d9_enc_string_map_begin(b, &m);
        d9_enc_string_map_entry(b, &m, "service", "t");
        d9_enc_string_map_end(b, &m);
        for (int i = 0; i < 3; i++) {
            d9_enc_event(b, &ss, 0, 20000000ull * (uint64_t)(i + 1));
            d9_put_varint(b, (uint64_t)i); d9_put_u8(b, 1); d9_put_varint(b, 1000); d9_put_u32(b, 1);
            d9_enc_event(b, &ss, 2, 20000000ull * (uint64_t)(i + 1) + 5);
            d9_put_varint(b, (uint64_t)i); d9_put_u32(b, 42); d9_put_u8(b, 0);
            d9_put_u8(b, 1); d9_put_u32(b, 2); d9_put_u32(b, 1); d9_put_u8(b, 0);
            d9_enc_event(b, &ss, 1, 20000000ull * (uint64_t)(i + 1) + 300);
            d9_put_varint(b, (uint64_t)i);
        }
    }
}

static void test_truncation_every_offset(void) {
    d9_buf b;
    d9_buf_init(&b);
    build_small(&b);
    /* where each event ends */
    uint64_t ends[64];
    size_t nev = 0;
    d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0 && nev < 64) ends[nev++] = d9_dec_get_stats(d)->bytes;
    CHECK(d9_dec_state(d) == D9_DEC_END);
    d9_dec_close(d);
    CHECK_EQ_U64(nev, 20);

    d9_buf gz = gzip_bytes(b.data, b.len);
    bool ok = true;
    for (size_t len = 0; len <= b.len; len++) {
        result r = decode_mem(b.data, len);
        size_t expect = 0;
        while (expect < nev && ends[expect] <= len) expect++;
        ok &= r.events == expect;
        ok &= r.status == D9_DEC_END || r.status == D9_DEC_TRUNCATED;
        if (r.status == D9_DEC_END) ok &= r.st.bytes == len;
        else ok &= r.stop < len && contains(r.msg, "truncated at offset") && r.st.bytes == r.stop;
        if (!ok) {
            fprintf(stderr, "prefix %zu: %" PRIu64 " events (want %zu), %s\n", len, r.events,
                    expect, r.msg);
            break;
        }
    }
    CHECK(ok);
    /* the same through gzip cut at every byte: never an error, never more events */
    for (size_t len = 0; ok && len <= gz.len; len++) {
        result r = decode_mem(gz.data, len);
        ok &= r.events <= nev && r.status != D9_DEC_RUNNING;
        if (len >= 2) ok &= r.status == D9_DEC_TRUNCATED || (len == gz.len && r.status == D9_DEC_END);
        if (!ok) fprintf(stderr, "gzip prefix %zu: %s\n", len, r.msg);
    }
    CHECK(ok);
    d9_buf_free(&gz);
    d9_buf_free(&b);
}

static void test_corrupted_bytes(void) {
    d9_buf b;
    d9_buf_init(&b);
    build_small(&b);
    uint8_t *copy = malloc(b.len);
    static const uint8_t flips[] = {0xff, 0x01, 0x80, 0x7f};
    size_t errors = 0, runs = 0;
    bool ok = true;
    for (size_t i = 0; i < b.len; i++) {
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(copy, b.data, b.len);
            copy[i] ^= flips[f];
            result r = decode_mem(copy, b.len);
            runs++;
            ok &= r.status != D9_DEC_RUNNING;
            ok &= r.events <= b.len / 4; /* an event frame takes at least 4 bytes */
            if (r.status == D9_DEC_ERROR || r.status == D9_DEC_DAMAGED) {
                errors++;
                ok &= contains(r.msg, r.status == D9_DEC_ERROR ? "error at offset " : "damaged at offset ");
            }
        }
    }
    CHECK(ok);
    CHECK(errors > runs / 10); /* flips in frame structure are detected (in values they cannot be) */
    printf("corrupted: %zu runs, %zu decode errors\n", runs, errors);
    free(copy);
    d9_buf_free(&b);
}

static d9t_rng rng = {D9T_RNG_SEED};

static void test_random_input(void) {
    uint8_t buf[512];
    bool ok = true;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = d9t_rng_next(&rng) % sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)d9t_rng_next(&rng);
        /* mostly a valid header, and frame tags among the known ones, to get deeper */
        if (iter % 4 && n >= 5) memcpy(buf, "TRC\0\1", 5);
        if (iter % 2)
            for (size_t i = 5; i < n; i += 1 + d9t_rng_next(&rng) % 16) buf[i] = (uint8_t)(1 + d9t_rng_next(&rng) % 6);
        result r = decode_mem(buf, n);
        ok &= r.status != D9_DEC_RUNNING;
        ok &= r.status != D9_DEC_ERROR || r.msg[0] != '\0';
    }
    CHECK(ok);
}

/* ---- inputs ---- */

static void test_inputs(void) {
    d9_buf b;
    d9_buf_init(&b);
    build_small(&b);
    char *path = write_temp(b.data, b.len);
    result r = drain(d9_dec_open_path(path, NULL, NULL, 0));
    CHECK(r.status == D9_DEC_END && r.events == 20 && !r.st.gzip);
    CHECK_EQ_U64(r.st.input_bytes, b.len);
    int fd = open(path, O_RDONLY);
    r = drain(d9_dec_open_fd(fd, true, NULL, NULL, 0));
    CHECK(r.status == D9_DEC_END && r.events == 20);
    FILE *f = fopen(path, "rb");
    r = drain(d9_dec_open_file(f, NULL, NULL, 0));
    CHECK(r.status == D9_DEC_END && r.events == 20);
    fclose(f);
    unlink(path);

    /* gzip file, and two gzip members concatenated (cat a.gz b.gz) */
    d9_buf gz = gzip_bytes(b.data, b.len);
    d9_buf gz2 = gzip_bytes(b.data, b.len);
    d9_put_bytes(&gz, gz2.data, gz2.len);
    r = read_two_members(gz, b.len);
    CHECK(r.st.gzip);
    /* a pipe: reads return what is there */
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(write(p[1], b.data, b.len) == (ssize_t)b.len);
    close(p[1]);
    r = drain(d9_dec_open_fd(p[0], true, NULL, NULL, 0));
    CHECK(r.status == D9_DEC_END && r.events == 20);
    d9_buf_free(&gz);
    d9_buf_free(&gz2);
    d9_buf_free(&b);
}

/* One stream: a clock sync at `sync` (wall clock `real`), then PollEnd events at `ts[i]`. */
static void build_timed(d9_buf *b, uint64_t sync, uint64_t real, const uint64_t *ts, int n) {
    d9_stream_state ss;
    d9_enc_header(b, &ss);
    d9_enc_schema(b, 0, builtin(D9_SCH_CLOCK_SYNC));
    d9_enc_schema(b, 1, builtin(D9_SCH_POLL_END));
    d9_enc_event(b, &ss, 0, sync);
    d9_put_varint(b, real);
    for (int i = 0; i < n; i++) {
        d9_enc_event(b, &ss, 1, ts[i]);
        d9_put_varint(b, 0);
    }
}

typedef struct timed_result {
    uint64_t events, flagged, flagged_ts;
    d9_dec_stats st;
} timed_result;

static timed_result decode_timed(const d9_buf *b) {
    timed_result r = {0};
    d9_decoder *d = d9_dec_open_mem(b->data, b->len, NULL, NULL, 0);
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) {
        r.events++;
        if (ev.implausible_ts) {
            r.flagged++;
            r.flagged_ts = ev.ts_ns;
        }
    }
    CHECK(d9_dec_state(d) == D9_DEC_END); /* a warning, not an error */
    r.st = *d9_dec_get_stats(d);
    d9_dec_close(d);
    return r;
}

/* Times outside the file's clock sync range by more than D9_DEC_TIME_SLACK_NS are flagged
 * (the hostile case: a timestamp reset to 2^63), and only those. */
static void test_implausible_timestamps(void) {
    const uint64_t sync = 500000000000000ull, real = 1700000000000000000ull;
    d9_buf b;
    d9_buf_init(&b);
    uint64_t ts[] = {sync + 1000, sync + 2000, 1ull << 63, sync + 3000, sync - 60000000000ull};
    build_timed(&b, sync, real, ts, 5);
    timed_result r = decode_timed(&b);
    CHECK_EQ_U64(r.events, 6);
    CHECK_EQ_U64(r.flagged, 1);
    CHECK_EQ_U64(r.flagged_ts, 1ull << 63);
    CHECK_EQ_U64(r.st.implausible_times, 1);
    CHECK_EQ_U64(r.st.first_implausible_ts, 1ull << 63);
    CHECK_EQ_U64(r.st.clock_sync_first_ns, sync);
    CHECK_EQ_U64(r.st.clock_sync_last_ns, sync);

    /* Just inside the slack on both sides: plausible. Just past it: not. */
    d9_buf_clear(&b);
    uint64_t edge[] = {sync - D9_DEC_TIME_SLACK_NS, sync + D9_DEC_TIME_SLACK_NS,
                       sync - D9_DEC_TIME_SLACK_NS - 1, sync + D9_DEC_TIME_SLACK_NS + 1};
    build_timed(&b, sync, real, edge, 4);
    r = decode_timed(&b);
    CHECK_EQ_U64(r.st.implausible_times, 2);

    /* Two segments a week apart concatenated: the second clock sync agrees with the wall
     * clock, so it widens the range and its events are plausible. */
    d9_buf_clear(&b);
    uint64_t week = 7ull * 24 * 3600 * 1000000000;
    uint64_t a[] = {sync + 10}, later[] = {sync + week + 10};
    build_timed(&b, sync, real, a, 1);
    build_timed(&b, sync + week, real + week, later, 1);
    r = decode_timed(&b);
    CHECK_EQ_U64(r.st.implausible_times, 0);
    CHECK_EQ_U64(r.st.clock_sync_last_ns, sync + week);

    /* A clock sync reset to 2^63 whose wall clock says seconds later: it is the implausible
     * one, and it does not make its events look right. */
    d9_buf_clear(&b);
    uint64_t absurd[] = {(1ull << 63) + 10};
    build_timed(&b, sync, real, a, 1);
    build_timed(&b, 1ull << 63, real + 1000000000, absurd, 1);
    r = decode_timed(&b);
    CHECK_EQ_U64(r.st.implausible_times, 2);
    CHECK_EQ_U64(r.st.clock_sync_last_ns, sync);

    /* No clock sync at all (nothing to compare with): nothing is flagged. */
    d9_buf_clear(&b);
    d9_stream_state ss;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, 1, builtin(D9_SCH_POLL_END));
    for (int i = 0; i < 2; i++) {
        d9_enc_event(&b, &ss, 1, i ? 1ull << 63 : 1000);
        d9_put_varint(&b, 0);
    }
    r = decode_timed(&b);
    CHECK_EQ_U64(r.st.implausible_times, 0);
    d9_buf_free(&b);
}

/* A damaged gzip trailer (CRC or length) after intact data: every event that inflates is
 * read, and the damage is still reported as an error (no silent success). Big enough that
 * the last inflate call covers many frames (it once lost them with the error). */
static void test_gzip_bad_trailer(void) {
    d9_buf one, b;
    d9_buf_init(&one);
    d9_buf_init(&b);
    build_small(&one);
    for (int i = 0; i < 4000; i++) d9_put_bytes(&b, one.data, one.len);
    for (int which = 0; which < 2; which++) { /* 0: CRC32, 1: ISIZE */
        d9_buf gz = gzip_bytes(b.data, b.len);
        gz.data[gz.len - (which == 0 ? 8 : 4)] ^= 0x5a;
        result r = decode_mem(gz.data, gz.len);
        CHECK_EQ_U64(r.events, 4000 * 20);
        CHECK_EQ_U64(r.st.bytes, b.len);
        CHECK(r.status == D9_DEC_ERROR);
        CHECK(contains(r.msg, which == 0 ? "incorrect data check" : "incorrect length check"));
        CHECK(contains(r.msg, "trailer"));
        /* the same through a file, read in small pieces */
        char *path = write_temp(gz.data, gz.len);
        d9_dec_options opt;
        d9_dec_options_init(&opt);
        opt.chunk_bytes = 4096;
        r = drain(d9_dec_open_path(path, &opt, NULL, 0));
        CHECK_EQ_U64(r.events, 4000 * 20);
        CHECK(r.status == D9_DEC_ERROR);
        unlink(path);
        d9_buf_free(&gz);
    }
    d9_buf_free(&one);
    d9_buf_free(&b);
}

/* zstd input (DIAL9_COMPRESS=zstd's .bin.zst): read from memory, a file in small pieces and
 * two frames concatenated; cut at every byte it is truncated, never an error and never more
 * events; a damaged checksum after intact data keeps every event and still fails; a frame
 * asking for a window over 8 MiB is refused with a message; libdial9's plain-only opener says
 * what the data is. */
static void test_zstd(void) {
    d9_buf b;
    d9_buf_init(&b);
    build_small(&b);
    d9_buf z = zstd_bytes(b.data, b.len);
    result r = decode_mem(z.data, z.len);
    CHECK(r.status == D9_DEC_END && r.events == 20 && r.st.zstd && !r.st.gzip);
    CHECK_EQ_U64(r.st.input_bytes, z.len);
    d9_buf z2 = zstd_bytes(b.data, b.len);
    d9_buf two;
    d9_buf_init(&two);
    d9_put_bytes(&two, z.data, z.len);
    d9_put_bytes(&two, z2.data, z2.len);
    r = read_two_members(two, b.len);
    CHECK(r.st.zstd);

    bool ok = true;
    for (size_t len = 0; ok && len < z.len; len++) {
        r = decode_mem(z.data, len);
        ok &= r.events <= 20 && r.status != D9_DEC_RUNNING;
        if (len >= 4) ok &= r.status == D9_DEC_TRUNCATED;
        if (!ok) fprintf(stderr, "zstd prefix %zu: %s\n", len, r.msg);
    }
    CHECK(ok);
    r = decode_mem(z.data, z.len - 1); /* only the checksum's last byte missing */
    CHECK(r.status == D9_DEC_TRUNCATED && contains(r.msg, "the zstd data ends early"));

    /* a damaged checksum: a big input, so that the last call covers many frames */
    d9_buf big;
    d9_buf_init(&big);
    for (int i = 0; i < 4000; i++) d9_put_bytes(&big, b.data, b.len);
    d9_buf zb = zstd_bytes(big.data, big.len);
    zb.data[zb.len - 2] ^= 0x5a;
    r = decode_mem(zb.data, zb.len);
    CHECK_EQ_U64(r.events, 4000 * 20);
    CHECK(r.status == D9_DEC_ERROR && contains(r.msg, "zstd: ") && contains(r.msg, "damaged zstd frame"));

    /* a frame header asking for a 128 MiB window (Window_Descriptor (27 - 10) << 3), then one raw byte */
    static const uint8_t huge_window[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x88, 0x09, 0x00, 0x00, 0x01};
    r = decode_mem(huge_window, sizeof huge_window);
    CHECK(r.status == D9_DEC_ERROR && contains(r.msg, "8 MiB"));

    char err[256] = "";
    d9_decoder *d = d9_dec_open_plain_mem(z.data, z.len, NULL, err, sizeof err);
    r = drain(d);
    CHECK(r.status == D9_DEC_ERROR && contains(r.msg, "zstd-compressed data: this reader reads uncompressed traces only"));
    d9_buf_free(&zb);
    d9_buf_free(&big);
    d9_buf_free(&two);
    d9_buf_free(&z2);
    d9_buf_free(&z);
    d9_buf_free(&b);
}

static void opening_blocked(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: d9_dec_open_path blocked on a FIFO\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

/* A FIFO or a device is not a trace file: refused at once, never opened in a blocking way. */
static void test_open_path_refuses_non_regular(void) {
    char dir[] = "/tmp/d9_test_decoder_fifo_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/trace.0.bin", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    signal(SIGALRM, opening_blocked);
    alarm(30);
    char err[256] = "";
    CHECK(d9_dec_open_path(fifo, NULL, err, sizeof err) == NULL);
    CHECK(contains(err, "not a regular file (a FIFO)"));
    CHECK(contains(err, fifo));
    CHECK(d9_dec_open_path("/dev/null", NULL, err, sizeof err) == NULL);
    CHECK(contains(err, "(a character device)"));
    CHECK(d9_dec_open_path(dir, NULL, err, sizeof err) == NULL);
    CHECK(contains(err, "(a directory)"));
    alarm(0);
    unlink(fifo);
    rmdir(dir);
}

/* `test_decoder --write-seeds DIR` writes the traces built here as fuzzing seeds
 * (tests/fuzz/corpus/fuzz_decoder). */
static int write_seeds(const char *dir) {
    d9_buf b;
    d9_buf_init(&b);
    char path[4096];
    for (int i = 0; i < 4; i++) {
        d9_buf_clear(&b);
        if (i == 0) build_all_types(&b);
        else build_small(&b);
        d9_buf z = i == 3 ? zstd_bytes(b.data, b.len) : gzip_bytes(b.data, b.len);
        const d9_buf *out = i >= 2 ? &z : &b;
        static const char *const names[] = {"all_types.bin", "two_streams.bin", "two_streams.bin.gz",
                                            "two_streams.bin.zst"};
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(out->data, 1, out->len, f) != out->len) return 1;
        fclose(f);
        d9_buf_free(&z);
    }
    d9_buf_free(&b);
    return 0;
}

/* ---- damage: skipped to the next stream header; a torn tail only at the very end ---- */

/* One stream of `n` PollEnd events with a string pool before them; *pool_len: where the pool
 * entry's length field is, from the stream's start. */
static void damage_stream(d9_buf *b, int n, size_t *pool_len) {
    d9_stream_state ss;
    d9_pool_frame pf;
    size_t start = b->len;
    d9_enc_header(b, &ss);
    d9_enc_schema(b, 0, builtin(D9_SCH_POLL_END));
    size_t pool = b->len;
    d9_enc_string_pool_begin(b, &pf);
    d9_enc_string_pool_entry(b, &pf, 1, "a.c:1:1", 7);
    d9_enc_pool_end(b, &pf);
    *pool_len = pool - start + 1 + 4 + 4; /* tag, count, id */
    for (int i = 0; i < n; i++) {
        d9_enc_event(b, &ss, 0, 1000 + (uint64_t)i);
        d9_put_varint(b, 1);
    }
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void test_damage_resync(void) {
    d9_buf b;
    d9_buf_init(&b);
    size_t starts[4], pool_len = 0;
    for (int k = 0; k < 4; k++) {
        starts[k] = b.len;
        damage_stream(&b, 10 + k, &pool_len);
    }
    size_t end = b.len;
    CHECK_EQ_U64(decode_mem(b.data, b.len).events, 10 + 11 + 12 + 13);

    /* stream 1's pool length set to 2^24: more than any writer writes */
    put_le32(b.data + starts[1] + pool_len, 1u << 24);
    uint64_t frame = starts[1] + pool_len - 9;
    result m = decode_mem(b.data, b.len);
    CHECK(m.status == D9_DEC_DAMAGED);
    CHECK_EQ_U64(m.events, 10 + 12 + 13);
    CHECK_EQ_U64(m.st.damaged_regions, 1);
    CHECK_EQ_U64(m.st.first_damage_offset, frame);
    CHECK_EQ_U64(m.st.damaged_bytes, starts[2] - frame);
    CHECK_EQ_U64(m.st.streams, 4);
    CHECK(!m.st.torn_tail);
    CHECK_EQ_U64(m.stop, end); /* nothing to cut */
    char want[160];
    snprintf(want, sizeof want, "damaged at offset %" PRIu64 " (stream 1): string pool frame", frame);
    CHECK(contains(m.msg, want));
    snprintf(want, sizeof want, "skipped %" PRIu64 " bytes to the next stream header at offset %zu",
             starts[2] - frame, starts[2]);
    CHECK(contains(m.msg, want));
    /* read in chunks of every size (the header search across reads): the same */
    char *path = write_temp(b.data, b.len);
    for (size_t chunk = 16; chunk <= 80; chunk++) {
        d9_dec_options opt;
        d9_dec_options_init(&opt);
        opt.chunk_bytes = chunk;
        result r = drain(d9_dec_open_path(path, &opt, NULL, 0));
        bool same = r.status == m.status && r.events == m.events && r.stop == m.stop &&
                    r.st.damaged_bytes == m.st.damaged_bytes && !strcmp(r.msg, m.msg);
        if (!same) fprintf(stderr, "chunk %zu: %s\n", chunk, r.msg);
        CHECK(same);
    }
    /* the recorder's own scan stops there, as it always did */
    d9_dec_options stop_opt;
    d9_dec_options_init(&stop_opt);
    stop_opt.stop_at_damage = true;
    result st = drain(d9_dec_open_mem(b.data, b.len, &stop_opt, NULL, 0));
    CHECK(st.status == D9_DEC_ERROR);
    CHECK_EQ_U64(st.stop, frame);
    CHECK_EQ_U64(st.events, 10);
    unlink(path);

    /* two damaged streams, and the last frame torn: damaged, the torn frame is where it stops */
    put_le32(b.data + starts[2] + pool_len, 1000); /* past the end, a header after it */
    size_t torn = end - 2;                          /* inside stream 3's last event */
    result t = decode_mem(b.data, torn);
    CHECK(t.status == D9_DEC_DAMAGED);
    CHECK_EQ_U64(t.st.damaged_regions, 2);
    CHECK_EQ_U64(t.events, 10 + 12);
    CHECK(t.st.torn_tail);
    CHECK_EQ_U64(t.stop, end - 7); /* the last event frame: tag, type id, u24 delta, worker id */
    CHECK(contains(t.msg, "2 damaged regions in all"));
    CHECK(contains(t.msg, "then truncated at offset"));

    /* the same torn tail on intact streams: truncated, not damaged */
    put_le32(b.data + starts[1] + pool_len, 7);
    put_le32(b.data + starts[2] + pool_len, 7);
    result c = decode_mem(b.data, torn);
    CHECK(c.status == D9_DEC_TRUNCATED);
    CHECK_EQ_U64(c.events, 10 + 11 + 12 + 12);
    CHECK_EQ_U64(c.stop, end - 7);
    CHECK_EQ_U64(c.st.damaged_regions, 0);
    d9_buf_free(&b);
}

/* A binding's uint_fields: the known fields a reader may read as value.u without testing each
 * value (required integer-like types), and no other: an optional, signed, string or absent
 * field keeps its bit clear, so readers take the tested path for it. */
static void test_binding_uint_fields(void) {
    d9_dec_binding b;
    const d9_dec_field ours[] = {{.name = "worker_id", .name_len = 9, .type = D9_FT_VARINT},
                                 {.name = "local_queue", .name_len = 11, .type = D9_FT_U8},
                                 {.name = "task_id", .name_len = 7, .type = D9_FT_VARINT},
                                 {.name = "spawn_loc", .name_len = 9, .type = D9_FT_POOLED_STRING}};
    d9_dec_bind(&b, "PollStartEvent", ours, 4);
    CHECK_EQ_U64(b.uint_fields, D9_KF_BIT(D9_KF_WORKER_ID) | D9_KF_BIT(D9_KF_LOCAL_QUEUE) | D9_KF_BIT(D9_KF_TASK_ID));
    const d9_dec_field other[] = {{.name = "worker_id", .name_len = 9, .type = D9_FT_VARINT, .optional = true},
                                  {.name = "task_id", .name_len = 7, .type = D9_FT_I64},
                                  {.name = "tid", .name_len = 3, .type = D9_FT_U32},
                                  {.name = "exact", .name_len = 5, .type = D9_FT_BOOL},
                                  {.name = "cpu_time_ns", .name_len = 11, .type = D9_FT_U16}};
    d9_dec_bind(&b, "SomeoneElsesEvent", other, 5);
    CHECK_EQ_U64(b.uint_fields, D9_KF_BIT(D9_KF_TID) | D9_KF_BIT(D9_KF_EXACT) | D9_KF_BIT(D9_KF_CPU_TIME_NS));
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) return write_seeds(argv[2]);
    test_golden_vector();
    test_binding_uint_fields();
    test_varint_lengths();
    test_all_types_round_trip();
    test_concatenated_streams();
    test_timestamp_resets();
    test_schema_reregistration();
    test_pools();
    test_lazy_pool_references();
    test_annotations();
    test_errors();
    test_truncation_every_offset();
    test_damage_resync();
    test_corrupted_bytes();
    test_random_input();
    test_inputs();
    test_gzip_bad_trailer();
    test_zstd();
    test_implausible_timestamps();
    test_open_path_refuses_non_regular();
    return d9t_summary("test_decoder");
}
