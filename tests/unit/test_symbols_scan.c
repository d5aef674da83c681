/* The in-process trace scanner (symbols/trace_scan.h) against the project's decoder on the same
 * bytes: the addresses (with their leaf/return flags), memory maps, named addresses and boot id
 * it finds must be exactly what a decoder-based reader finds, on hand-built traces that use
 * every frame kind and field type, on every truncation of them, and on the real dial9 fixture.
 * Corrupted input must never crash it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "format/decoder.h"
#include "format/encoder.h"
#include "format/schemas.h"
#include "format/wire.h"
#include "format/dec_skip_plan.h"
#include "symbols/sym_input.h"
#include "symbols/trace_scan.h"
#include "test_dial9_park_schemas.h"

/* ------------------------------------------------------------------ reference via the decoder */

static bool is_stack_type(uint8_t t) { return t == D9_FT_POOLED_STACK || t == D9_FT_STACK; }

/* What the scanner must find, collected with the decoder. Unresolved stack references are
 * retried once the stream is over (the decoder keeps the stream's pools until the next
 * header), exactly like the scanner's end-of-stream completion. */
typedef struct ref_pending {
    uint32_t id;
    bool exact;
} ref_pending;

static d9_dec_status reference(const uint8_t *data, size_t len, d9_sym_input *in, uint64_t *stop) {
    d9_decoder *d = d9_dec_open_mem(data, len, NULL, NULL, 0);
    d9_event ev;
    ref_pending pend[256];
    size_t npend = 0;
    uint32_t stream = 0;
    while (d9_dec_next(d, &ev) > 0) {
        if (ev.stream != stream) {
            npend = 0; /* the pools of the previous stream are gone: lost refs */
            stream = ev.stream;
        }
        /* pending references may have been defined by now */
        size_t k = 0;
        for (size_t i = 0; i < npend; i++) {
            const uint64_t *a;
            uint32_t n;
            if (d9_dec_pool_stack(d, pend[i].id, &a, &n)) d9_sym_input_add_stack(in, a, n, pend[i].exact);
            else pend[k++] = pend[i];
        }
        npend = k;
        const d9_dec_schema *s = ev.schema;
        bool exact = !strcmp(s->name, "CpuSampleEvent");
        for (uint16_t i = 0; i < s->field_count; i++) {
            if (!is_stack_type(s->fields[i].type) || !ev.values[i].present) continue;
            if (ev.values[i].resolved)
                d9_sym_input_add_stack(in, ev.values[i].stack.addrs, ev.values[i].stack.count, exact);
            else if (npend < 256)
                pend[npend++] = (ref_pending){ev.values[i].pool_id, exact};
        }
        d9_dec_str str, bid = {"", 0};
        uint64_t a = 0, b = 0, c = 0;
        if (!strcmp(s->name, "MemoryMapEvent") && d9_value_uint(d9_event_field(&ev, "start"), &a) &&
            d9_value_uint(d9_event_field(&ev, "end"), &b) && d9_value_str(d9_event_field(&ev, "path"), &str)) {
            d9_value_uint(d9_event_field(&ev, "file_offset"), &c);
            d9_value_str(d9_event_field(&ev, "build_id"), &bid);
            d9_sym_input_add_map(in, a, b, c, str.ptr, str.len, bid.ptr, bid.len);
        }
        if (!strcmp(s->name, "SymbolTableEntry") && d9_value_uint(d9_event_field(&ev, "addr"), &a) &&
            d9_value_str(d9_event_field(&ev, "symbol_name"), &str))
            d9_sym_input_note_symbol(in, a, str.ptr, str.len);
        const d9_value *m = d9_event_field(&ev, "entries");
        if (!strcmp(s->name, "SegmentMetadataEvent") && m && m->present && m->type == D9_FT_STRING_MAP)
            for (uint32_t i = 0; i < m->map.count; i++)
                if (m->map.items[i].key.len == 7 && !memcmp(m->map.items[i].key.ptr, "boot_id", 7))
                    snprintf(in->boot_id, sizeof in->boot_id, "%.*s", (int)m->map.items[i].value.len,
                             m->map.items[i].value.ptr);
    }
    for (size_t i = 0; i < npend; i++) {
        const uint64_t *a;
        uint32_t n;
        if (d9_dec_pool_stack(d, pend[i].id, &a, &n)) d9_sym_input_add_stack(in, a, n, pend[i].exact);
    }
    d9_dec_status st = d9_dec_state(d);
    *stop = d9_dec_stop_offset(d);
    d9_dec_close(d);
    return st;
}

static bool same_input(const d9_sym_input *a, const d9_sym_input *b, bool verbose) {
    bool same = a->addrs.count == b->addrs.count && a->map_count == b->map_count &&
                strcmp(a->boot_id, b->boot_id) == 0;
    uint64_t k, v;
    for (size_t pos = 0; same && d9_u64_map_next(&a->addrs, &pos, &k, &v);) {
        uint64_t *w = d9_u64_map_get(&b->addrs, k);
        same = w && *w == v;
        if (!same && verbose) fprintf(stderr, "addr %" PRIx64 ": flags %" PRIu64 " vs %" PRIu64 "\n", k, v, w ? *w : 99);
    }
    for (size_t i = 0; same && i < a->map_count; i++) {
        const d9_sym_map *x = &a->maps[i], *y = &b->maps[i];
        same = x->start == y->start && x->end == y->end && x->file_offset == y->file_offset &&
               !strcmp(x->path, y->path) && !strcmp(x->build_id, y->build_id);
    }
    if (!same && verbose)
        fprintf(stderr, "scan: %zu addrs %zu maps boot '%s'; decoder: %zu addrs %zu maps boot '%s'\n",
                a->addrs.count, a->map_count, a->boot_id, b->addrs.count, b->map_count, b->boot_id);
    return same;
}

/* ------------------------------------------------------------------ building traces */

static const d9_schema_field custom_fields[] = {
    {"when", D9_FT_I64},         {"ratio", D9_FT_F64},        {"ok", D9_FT_BOOL},
    {"label", D9_FT_STRING},     {"blob", D9_FT_BYTES},       {"inline_stack", D9_FT_STACK},
    {"tags", D9_FT_STRING_MAP},  {"small", D9_FT_U8},         {"mid", D9_FT_U16},
    {"big", D9_FT_U32},          {"list", D9_FT_DYN_LIST},    {"map", D9_FT_DYN_MAP},
    {"maybe", D9_FT_OPTIONAL | D9_FT_VARINT}, {"pooled", D9_FT_POOLED_STACK},
};
static const d9_schema_def custom = {"CustomStackEvent", true, 14, custom_fields};

static void string_pool(d9_buf *b, uint32_t id, const char *s) {
    d9_pool_frame pf;
    d9_enc_string_pool_begin(b, &pf);
    d9_enc_string_pool_entry(b, &pf, id, s, strlen(s));
    d9_enc_pool_end(b, &pf);
}

static void stack_pool(d9_buf *b, uint32_t id, const uint64_t *f, uint32_t n) {
    d9_pool_frame pf;
    d9_enc_stack_pool_begin(b, &pf);
    d9_enc_stack_pool_entry(b, &pf, id, f, n);
    d9_enc_pool_end(b, &pf);
}

static void cpu_sample(d9_buf *b, d9_stream_state *st, uint64_t ts, uint32_t stack, bool named) {
    d9_enc_event(b, st, D9_SCH_CPU_SAMPLE, ts);
    d9_put_varint(b, 1);
    d9_put_u32(b, 42);
    d9_put_u8(b, 0);
    d9_put_u8(b, named);
    if (named) d9_put_u32(b, 7);
    d9_put_u32(b, stack);
    d9_put_u8(b, 1);
    d9_put_varint(b, 3);
}

static void build_trace(d9_buf *b) {
    d9_stream_state st;
    /* stream 1: metadata, maps, samples, a dump, symbols; a reference before its definition */
    d9_enc_header(b, &st);
    d9_enc_schema(b, D9_SCH_SEGMENT_METADATA, &d9_builtin_schemas[D9_SCH_SEGMENT_METADATA]);
    d9_enc_event(b, &st, D9_SCH_SEGMENT_METADATA, 1000);
    d9_pool_frame map;
    d9_enc_string_map_begin(b, &map);
    d9_enc_string_map_entry(b, &map, "service", "x");
    d9_enc_string_map_entry(b, &map, "boot_id", "0123-boot");
    d9_enc_string_map_end(b, &map);
    d9_enc_schema(b, D9_SCH_MEMORY_MAP, &d9_builtin_schemas[D9_SCH_MEMORY_MAP]);
    string_pool(b, 1, "/usr/lib/libfoo.so");
    string_pool(b, 7, "worker-7");
    d9_enc_event(b, &st, D9_SCH_MEMORY_MAP, 2000);
    d9_put_varint(b, 0x7f0000001000);
    d9_put_varint(b, 0x7f0000009000);
    d9_put_varint(b, 0x1000);
    d9_put_u32(b, 1);
    d9_put_lstring(b, "abcdef0123", 10);
    d9_enc_schema(b, D9_SCH_CPU_SAMPLE, &d9_builtin_schemas[D9_SCH_CPU_SAMPLE]);
    uint64_t s1[] = {0x7f0000001234, 0x7f0000002000, 0x55550000};
    stack_pool(b, 5, s1, 3);
    cpu_sample(b, &st, 3000, 5, true);
    cpu_sample(b, &st, 40000000, 6, false); /* pool 6 comes later (a reset frame before it) */
    uint64_t s2[] = {0x7f0000002000, 0x7f0000003000};
    stack_pool(b, 6, s2, 2);
    d9_enc_schema(b, D9_SCH_TASK_DUMP, &d9_builtin_schemas[D9_SCH_TASK_DUMP]);
    uint64_t s3[] = {0x7f0000004000, 0x7f0000001234};
    stack_pool(b, 9, s3, 2);
    d9_enc_event(b, &st, D9_SCH_TASK_DUMP, 40000100);
    d9_put_varint(b, 77);
    d9_put_u32(b, 9);
    /* annotations and a re-registered identical schema */
    d9_put_u8(b, D9_FRAME_ANNOTATIONS);
    d9_put_varint(b, D9_SCH_CPU_SAMPLE);
    d9_put_u16(b, 1);
    d9_put_u16(b, 0);
    d9_put_u16(b, 13);
    d9_put_bytes(b, "metrique.unit", 13);
    d9_put_u32(b, 2);
    d9_put_bytes(b, "ns", 2);
    d9_enc_schema(b, D9_SCH_CPU_SAMPLE, &d9_builtin_schemas[D9_SCH_CPU_SAMPLE]);
    d9_enc_schema(b, D9_SCH_SYMBOL_TABLE_ENTRY, &d9_builtin_schemas[D9_SCH_SYMBOL_TABLE_ENTRY]);
    string_pool(b, 20, "foo_function");
    string_pool(b, 21, "");
    string_pool(b, 22, "libfoo.so+0x3000");
    uint64_t named[][2] = {{0x7f0000001234, 20}, {0x7f0000003000, 22}};
    for (int i = 0; i < 2; i++) {
        d9_enc_event(b, &st, D9_SCH_SYMBOL_TABLE_ENTRY, 0);
        d9_put_varint(b, named[i][0]);
        d9_put_varint(b, 0);
        d9_put_u32(b, (uint32_t)named[i][1]);
        d9_put_varint(b, 0);
        d9_put_u32(b, 21);
        d9_put_varint(b, 0);
    }
    /* stream 2: a custom schema with every field type, inline and pooled stacks; ids reused */
    d9_enc_header(b, &st);
    d9_enc_schema(b, 3, &custom);
    uint64_t s4[] = {0x1111, 0x2222};
    stack_pool(b, 5, s4, 2);
    for (int present = 0; present < 2; present++) {
        d9_enc_event(b, &st, 3, 100);
        d9_put_u64(b, (uint64_t)-5);
        d9_put_u64(b, 0x3ff0000000000000ull);
        d9_put_u8(b, 1);
        d9_put_lstring(b, "hello", 5);
        d9_put_lstring(b, "\0\1\2", 3);
        d9_put_u32(b, 3);
        d9_put_u64(b, 0x3333);
        d9_put_u64(b, 0x4444);
        d9_put_u64(b, 0x5555 + (uint64_t)present);
        d9_pool_frame tags;
        d9_enc_string_map_begin(b, &tags);
        d9_enc_string_map_entry(b, &tags, "boot_id", "not-metadata");
        d9_enc_string_map_end(b, &tags);
        d9_put_u8(b, 200);
        d9_put_u16(b, 60000);
        d9_put_u32(b, 4000000000u);
        d9_put_u32(b, 2); /* list: a varint and a nested list */
        d9_put_u8(b, D9_FT_VARINT);
        d9_put_varint(b, 300);
        d9_put_u8(b, D9_FT_DYN_LIST);
        d9_put_u32(b, 1);
        d9_put_u8(b, D9_FT_STRING);
        d9_put_lstring(b, "in", 2);
        d9_put_u32(b, 1); /* map: one pair */
        d9_put_u8(b, D9_FT_STRING);
        d9_put_lstring(b, "k", 1);
        d9_put_u8(b, D9_FT_OPTIONAL | D9_FT_U32);
        d9_put_u8(b, 1);
        d9_put_u32(b, 9);
        d9_put_u8(b, (uint8_t)present);
        if (present) d9_put_varint(b, 1u << 20);
        d9_put_u32(b, 5);
    }
    /* stream 3: nothing but a header and a reset */
    d9_enc_header(b, &st);
    d9_enc_timestamp_reset(b, &st, 5);
}

static void check_bytes(const uint8_t *data, size_t len, const char *what, bool verbose) {
    d9_sym_input a, b;
    d9_sym_input_init(&a);
    d9_sym_input_init(&b);
    d9_scan_result res;
    d9_trace_scan(data, len, &a, &res);
    uint64_t stop;
    d9_dec_status st = reference(data, len, &b, &stop);
    d9_scan_status want = st == D9_DEC_END ? D9_SCAN_END : st == D9_DEC_TRUNCATED ? D9_SCAN_TRUNCATED : D9_SCAN_ERROR;
    bool ok = res.status == want && (want == D9_SCAN_ERROR || res.good_bytes == stop);
    if (want != D9_SCAN_ERROR) ok = ok && same_input(&a, &b, verbose);
    if (!ok && verbose)
        fprintf(stderr, "%s (%zu bytes): scan status %d good %" PRIu64 " (%s); decoder %d stop %" PRIu64 "\n", what,
                len, res.status, res.good_bytes, res.message, st, stop);
    CHECK(ok);
    d9_sym_input_free(&a);
    d9_sym_input_free(&b);
}

static void test_hand_built(void) {
    d9_buf b;
    d9_buf_init(&b);
    build_trace(&b);
    CHECK(!b.failed);
    check_bytes(b.data, b.len, "whole trace", true);

    /* what it found, spelled out */
    d9_sym_input in;
    d9_sym_input_init(&in);
    d9_scan_result res;
    d9_trace_scan(b.data, b.len, &in, &res);
    CHECK(res.status == D9_SCAN_END);
    CHECK_EQ_U64(res.good_bytes, b.len);
    CHECK_STR(in.boot_id, "0123-boot");
    CHECK_EQ_U64(in.map_count, 1);
    CHECK_STR(in.maps[0].path, "/usr/lib/libfoo.so");
    CHECK_STR(in.maps[0].build_id, "abcdef0123");
    uint64_t *f;
    CHECK((f = d9_u64_map_get(&in.addrs, 0x7f0000001234)) && *f == (D9_ADDR_EXACT | D9_ADDR_RETURN | D9_ADDR_NAMED));
    CHECK((f = d9_u64_map_get(&in.addrs, 0x7f0000002000)) && *f == (D9_ADDR_EXACT | D9_ADDR_RETURN));
    CHECK((f = d9_u64_map_get(&in.addrs, 0x7f0000003000)) && *f == (D9_ADDR_RETURN | D9_ADDR_FALLBACK));
    CHECK((f = d9_u64_map_get(&in.addrs, 0x7f0000004000)) && *f == D9_ADDR_RETURN); /* task dump leaf */
    CHECK((f = d9_u64_map_get(&in.addrs, 0x3333)) && *f == D9_ADDR_RETURN);
    CHECK((f = d9_u64_map_get(&in.addrs, 0x5556)) && *f == D9_ADDR_RETURN);
    CHECK((f = d9_u64_map_get(&in.addrs, 0x2222)) && *f == D9_ADDR_RETURN);
    CHECK(d9_u64_map_get(&in.addrs, 0x1111) != NULL);
    d9_sym_input_free(&in);

    /* every truncation */
    for (size_t len = 0; len < b.len; len++) check_bytes(b.data, len, "prefix", len % 97 == 0);

    /* corruption: never a crash; the scanner stops where it must */
    uint8_t *copy = malloc(b.len);
    unsigned seed = 7;
    for (int round = 0; round < 4000; round++) {
        memcpy(copy, b.data, b.len);
        for (int k = 0; k < 1 + round % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % b.len] ^= (uint8_t)(1u << (seed % 8));
        }
        d9_sym_input_init(&in);
        d9_trace_scan(copy, b.len, &in, &res);
        CHECK(res.good_bytes <= b.len);
        d9_sym_input_free(&in);
    }
    free(copy);

    /* bad magic, bad version, unknown tag, different schema under a used type id */
    const uint8_t bad_magic[] = {'T', 'R', 'X', 0, 1};
    const uint8_t bad_version[] = {'T', 'R', 'C', 0, 2};
    const uint8_t bad_tag[] = {'T', 'R', 'C', 0, 1, 0x07, 0, 0};
    const uint8_t *bads[] = {bad_magic, bad_version, bad_tag};
    size_t lens[] = {5, 5, 8};
    for (int i = 0; i < 3; i++) {
        d9_sym_input_init(&in);
        d9_trace_scan(bads[i], lens[i], &in, &res);
        CHECK(res.status == D9_SCAN_ERROR);
        CHECK(res.message[0] != 0);
        d9_sym_input_free(&in);
        check_bytes(bads[i], lens[i], "bad input", true);
    }
    d9_buf c;
    d9_buf_init(&c);
    d9_stream_state st;
    d9_enc_header(&c, &st);
    d9_enc_schema(&c, 0, &d9_builtin_schemas[D9_SCH_POLL_END]);
    d9_enc_schema(&c, 0, &d9_builtin_schemas[D9_SCH_TASK_TERMINATE]);
    d9_sym_input_init(&in);
    d9_trace_scan(c.data, c.len, &in, &res);
    CHECK(res.status == D9_SCAN_ERROR);
    d9_sym_input_free(&in);
    d9_buf_free(&c);
    d9_buf_free(&b);
}

/* ------------------------------------------------------------------ the skip path */

/* check_bytes on an exact-size copy of the first len bytes: a read past the end of the data is
 * then one the sanitizers see. */
static void check_prefix(const uint8_t *data, size_t len, const char *what, bool verbose) {
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    check_bytes(copy, len, what, verbose);
    free(copy);
}

/* The plan on its own: where it says an event ends, and what it refuses. */
static void test_skip_plan(void) {
    d9_skip_plan pl;
    const uint8_t poll_start[] = {D9_FT_VARINT, D9_FT_U8, D9_FT_VARINT, D9_FT_POOLED_STRING};
    CHECK(d9_skip_plan_build(&pl, true, poll_start, 4));
    CHECK_EQ_U64(pl.max_size, 3 + 10 + 1 + 10 + 4);
    uint8_t ev[64] = {0};
    ev[3] = 0x81; /* worker_id: 2 bytes */
    ev[4] = 0x01;
    CHECK(d9_skip_event(&pl, ev) == ev + 3 + 2 + 1 + 1 + 4);
    memset(ev + 3, 0xff, 9); /* the longest varint: 10 bytes */
    ev[12] = 0x01;
    CHECK(d9_skip_event(&pl, ev) == ev + 3 + 10 + 1 + 1 + 4);
    ev[12] = 0x80; /* an 11th byte */
    CHECK(d9_skip_event(&pl, ev) == NULL);
    ev[12] = 0x02; /* a 10th byte beyond bit 63: the decoder refuses it, so must the plan */
    CHECK(d9_skip_event(&pl, ev) == NULL);
    d9_skip_plan_free(&pl);

    const uint8_t optional[] = {D9_FT_U16, D9_FT_OPTIONAL | D9_FT_VARINT};
    CHECK(d9_skip_plan_build(&pl, false, optional, 2));
    CHECK_EQ_U64(pl.max_size, 2 + 1 + 10);
    uint8_t opt[16] = {0, 0, 1, 0x85, 0x03};
    CHECK(d9_skip_event(&pl, opt) == opt + 5);
    opt[2] = 0;
    CHECK(d9_skip_event(&pl, opt) == opt + 3);
    opt[2] = 2;
    CHECK(d9_skip_event(&pl, opt) == NULL);
    d9_skip_plan_free(&pl);

    CHECK(d9_skip_plan_build(&pl, false, NULL, 0)); /* an event with nothing in it */
    CHECK_EQ_U64(pl.max_size, 0);
    CHECK(d9_skip_event(&pl, ev) == ev);
    d9_skip_plan_free(&pl);

    /* sizes known only by reading: the generic reader's job */
    const uint8_t refused[][2] = {{D9_FT_VARINT, D9_FT_STRING}, {D9_FT_BYTES, D9_FT_U8},
                                  {D9_FT_STACK, D9_FT_U8}, {D9_FT_STRING_MAP, D9_FT_U8},
                                  {D9_FT_DYN_LIST, D9_FT_U8}, {D9_FT_U8, D9_FT_DYN_MAP},
                                  {D9_FT_U8, D9_FT_OPTIONAL | D9_FT_U32}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) CHECK(!d9_skip_plan_build(&pl, true, refused[i], 2));
}

/* An untimed schema with every fixed width and an optional varint between them. */
static const d9_schema_field ticks_fields[] = {
    {"a", D9_FT_U16},  {"b", D9_FT_I64},  {"c", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"d", D9_FT_F64},  {"e", D9_FT_BOOL}, {"f", D9_FT_VARINT},
};
static const d9_schema_def ticks = {"Ticks", false, 6, ticks_fields};

enum { SKIP_EVENTS = 300, SKIP_SAMPLE = SKIP_EVENTS / 2 };
enum damage { INTACT, LONG_VARINT, WIDE_VARINT, BAD_PRESENCE };

/* A varint of 1 to 10 bytes, by i. */
static uint64_t wide(int i) { return 1ull << (7 * (i % 10)); }

/* A varint; when broken, one that never ends within 10 bytes (LONG_VARINT) or whose 10th
 * byte holds more than bit 63 (WIDE_VARINT). */
static void put_varint(d9_buf *b, uint64_t v, enum damage broken) {
    if (broken != LONG_VARINT && broken != WIDE_VARINT) {
        d9_put_varint(b, v);
        return;
    }
    for (int i = 0; i < 9; i++) d9_put_u8(b, 0x80);
    d9_put_u8(b, broken == LONG_VARINT ? 0x80 : 0x02);
    d9_put_u8(b, 0x01);
}

/* A stream of events that yield nothing, of every layout the skip plan knows, with one CPU
 * sample in the middle whose stack must still be found (so every step over an event lands on
 * the next frame). starts[i] is where event i begins, starts[SKIP_EVENTS] the end. `dmg` is
 * done to event `at`: its first varint runs past 10 bytes, or its presence byte is 2. */
static void build_skip_trace(d9_buf *b, size_t *starts, enum damage dmg, int at) {
    d9_stream_state st;
    d9_enc_header(b, &st);
    static const int ids[] = {D9_SCH_POLL_START, D9_SCH_POLL_END, D9_SCH_WORKER_UNPARK, D9_SCH_SCHED_SWITCH,
                              D9_SCH_WAKE, D9_SCH_CPU_SAMPLE};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) /* unparks in the optional layout: presence bytes */
        d9_enc_schema(b, (uint16_t)ids[i], ids[i] == D9_SCH_WORKER_UNPARK ? &d9_test_optional_unpark : &d9_builtin_schemas[ids[i]]);
    d9_enc_schema(b, 100, &ticks);
    string_pool(b, 3, "spawn.c:10");
    uint64_t frames[] = {0x7f0000001234, 0x7f0000005678};
    stack_pool(b, 5, frames, 2);
    for (int i = 0; i < SKIP_EVENTS; i++) {
        starts[i] = b->len;
        enum damage broken = i == at ? dmg : INTACT;
        uint64_t ts = 1000 + 100 * (uint64_t)i; /* small steps: no reset frames between events */
        if (i == SKIP_SAMPLE) {
            cpu_sample(b, &st, ts, 5, false);
            continue;
        }
        switch (i % 6) {
        case 0:
            d9_enc_event(b, &st, D9_SCH_POLL_START, ts);
            put_varint(b, (uint64_t)i % 3, broken);
            d9_put_u8(b, 1);
            d9_put_varint(b, wide(i));
            d9_put_u32(b, 3);
            break;
        case 1:
            d9_enc_event(b, &st, D9_SCH_POLL_END, ts);
            put_varint(b, wide(i), broken);
            break;
        case 2: /* cpu_time_ns and sched_wait_ns optional (d9_test_optional_unpark): both present, or both absent */
            d9_enc_event(b, &st, D9_SCH_WORKER_UNPARK, ts);
            put_varint(b, 1, broken);
            d9_put_u8(b, 0);
            for (int f = 0; f < 2; f++) {
                bool present = i / 6 % 2;
                d9_put_u8(b, dmg == BAD_PRESENCE && i == at && f == 1 ? 2 : (uint8_t)present);
                if (present) d9_put_varint(b, wide(i + 3 * f));
            }
            d9_put_u32(b, 4242);
            break;
        case 3: /* the optional cpu last: present or not */
            d9_enc_event(b, &st, D9_SCH_SCHED_SWITCH, ts);
            d9_put_u32(b, 4242);
            put_varint(b, 2, broken);
            d9_put_u8(b, 1);
            d9_put_u8(b, 0);
            d9_put_u8(b, dmg == BAD_PRESENCE && i == at ? 2 : (uint8_t)(i / 6 % 2));
            if (i / 6 % 2) d9_put_varint(b, wide(i));
            break;
        case 4: /* untimed, fixed widths around the optional varint */
            d9_enc_event_untimed(b, 100);
            d9_put_u16(b, 7);
            d9_put_u64(b, (uint64_t)-1);
            d9_put_u8(b, dmg == BAD_PRESENCE && i == at ? 2 : (uint8_t)(i / 6 % 2));
            if (i / 6 % 2) d9_put_varint(b, wide(i + 1));
            d9_put_u64(b, 0);
            d9_put_u8(b, 1);
            put_varint(b, wide(i), broken);
            break;
        default:
            d9_enc_event(b, &st, D9_SCH_WAKE, ts);
            put_varint(b, wide(i), broken);
            d9_put_varint(b, 9);
            d9_put_u8(b, 255);
        }
    }
    starts[SKIP_EVENTS] = b->len;
}

static void scan(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res) {
    d9_sym_input_init(in);
    d9_trace_scan(data, len, in, res);
}

static void test_skip_path(void) {
    d9_buf b;
    d9_buf_init(&b);
    size_t starts[SKIP_EVENTS + 1];
    build_skip_trace(&b, starts, INTACT, -1);
    CHECK(!b.failed);
    check_prefix(b.data, b.len, "skip trace", true);
    d9_sym_input in;
    d9_scan_result res;
    scan(b.data, b.len, &in, &res);
    CHECK(res.status == D9_SCAN_END);
    CHECK_EQ_U64(res.events, SKIP_EVENTS);
    CHECK_EQ_U64(res.good_bytes, b.len);
    CHECK(d9_u64_map_get(&in.addrs, 0x7f0000005678) != NULL); /* the sample amid the run */
    d9_sym_input_free(&in);

    /* every truncation, each in a buffer of its own size */
    for (size_t len = 0; len < b.len; len++) check_prefix(b.data, len, "skip prefix", len % 101 == 0);
    /* cut inside skipped events amid the run and near its end: the scan ends before them */
    const int cut[] = {1, 37, 122, 123, 124, 201, SKIP_EVENTS - 1};
    for (size_t k = 0; k < sizeof cut / sizeof cut[0]; k++) {
        int e = cut[k];
        size_t ends[] = {starts[e] + 1, starts[e] + 3, starts[e + 1] - 1};
        for (int j = 0; j < 3; j++) {
            uint8_t *copy = malloc(ends[j]);
            memcpy(copy, b.data, ends[j]);
            scan(copy, ends[j], &in, &res);
            CHECK(res.status == D9_SCAN_TRUNCATED);
            CHECK_EQ_U64(res.good_bytes, starts[e]);
            CHECK_EQ_U64(res.events, (uint64_t)e);
            d9_sym_input_free(&in);
            free(copy);
        }
    }
    d9_buf_free(&b);

    /* malformed events amid the run and at its end: an error at the event, nothing after it */
    const struct { enum damage dmg; int at; const char *says; } bad[] = {
        {LONG_VARINT, 120, "varint"}, {LONG_VARINT, 121, "varint"}, {LONG_VARINT, 122, "varint"}, {LONG_VARINT, 123, "varint"},
        {LONG_VARINT, 124, "varint"}, {LONG_VARINT, 125, "varint"}, {LONG_VARINT, SKIP_EVENTS - 1, "varint"},
        {WIDE_VARINT, 120, "64 bits"}, {WIDE_VARINT, 123, "64 bits"}, {WIDE_VARINT, SKIP_EVENTS - 1, "64 bits"},
        {BAD_PRESENCE, 9, "presence"}, {BAD_PRESENCE, 130, "presence"}, {BAD_PRESENCE, SKIP_EVENTS - 2, "presence"},
        {BAD_PRESENCE, 8, "presence"}, {BAD_PRESENCE, 14, "presence"}, /* an unpark's sched_wait_ns */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        d9_buf_init(&b);
        build_skip_trace(&b, starts, bad[k].dmg, bad[k].at);
        check_prefix(b.data, b.len, "damaged skip trace", true);
        scan(b.data, b.len, &in, &res);
        CHECK(res.status == D9_SCAN_ERROR);
        CHECK_EQ_U64(res.good_bytes, starts[bad[k].at]);
        CHECK_EQ_U64(res.events, (uint64_t)bad[k].at);
        CHECK(strstr(res.message, bad[k].says) != NULL);
        CHECK((d9_u64_map_get(&in.addrs, 0x7f0000005678) != NULL) == (bad[k].at > SKIP_SAMPLE));
        d9_sym_input_free(&in);
        d9_buf_free(&b);
    }
}

static void test_fixture(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/fixtures/dial9-demo-trace.bin", d9t_shared_dir());
    gzFile g = gzopen(path, "rb");
    if (!g) {
        printf("skip: %s not found (set D9_SHARED_DIR)\n", path);
        return;
    }
    size_t cap = 8 << 20, len = 0;
    uint8_t *data = malloc(cap);
    int n;
    while ((n = gzread(g, data + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)n;
        if (len == cap) data = realloc(data, cap *= 2);
    }
    gzclose(g);
    CHECK(len == 4047237);
    check_bytes(data, len, "fixture", true);
    d9_sym_input in;
    d9_sym_input_init(&in);
    d9_scan_result res;
    d9_trace_scan(data, len, &in, &res);
    CHECK(res.status == D9_SCAN_END);
    CHECK_EQ_U64(res.events, 210639);
    /* dial9 named these addresses already: 992 entries, fewer distinct addresses */
    size_t named = 0, need = 0;
    uint64_t k, v;
    for (size_t pos = 0; d9_u64_map_next(&in.addrs, &pos, &k, &v);) {
        named += (v & D9_ADDR_NAMED) != 0;
        need += (v & (D9_ADDR_RETURN | D9_ADDR_EXACT)) && !(v & D9_ADDR_NAMED);
    }
    printf("fixture: %zu addresses, %zu named by dial9, %zu without a name\n", in.addrs.count, named, need);
    CHECK(named > 100);
    d9_sym_input_free(&in);
    free(data);
}

/* A StackOriginEvent names a stack without using it: a CPU sample's leaf stays the interrupted
 * instruction (named by its own address), not a return address too. */
static void test_stack_origin_is_no_use(void) {
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state st;
    d9_enc_header(&b, &st);
    d9_enc_schema(&b, D9_SCH_CPU_SAMPLE, &d9_builtin_schemas[D9_SCH_CPU_SAMPLE]);
    d9_enc_schema(&b, D9_SCH_STACK_ORIGIN, &d9_builtin_schemas[D9_SCH_STACK_ORIGIN]);
    uint64_t s[] = {0x7f000000a000, 0x7f000000b000};
    stack_pool(&b, 3, s, 2);
    d9_enc_event(&b, &st, D9_SCH_STACK_ORIGIN, 100);
    d9_put_u32(&b, 3);
    d9_put_u8(&b, D9_ORIGIN_CFI);
    cpu_sample(&b, &st, 200, 3, false);
    d9_sym_input in;
    d9_sym_input_init(&in);
    d9_scan_result res;
    d9_trace_scan(b.data, b.len, &in, &res);
    CHECK(res.status == D9_SCAN_END);
    uint64_t *f;
    CHECK((f = d9_u64_map_get(&in.addrs, 0x7f000000a000)) && *f == D9_ADDR_EXACT);
    CHECK((f = d9_u64_map_get(&in.addrs, 0x7f000000b000)) && *f == D9_ADDR_RETURN);
    d9_sym_input_free(&in);
    d9_buf_free(&b);
}

/* The oracle the pipeline test checks the collector's lists with: a list covers a scan when it
 * has every address with its flags, the maps in order (others between) and the boot id. */
static void test_covers(void) {
    d9_sym_input scan, list;
    d9_sym_input_init(&scan);
    d9_sym_input_init(&list);
    uint64_t stack[] = {0x1000, 0x2000, 0x3000};
    d9_sym_input_add_stack(&scan, stack, 3, true); /* leaf exact */
    d9_sym_input_add_map(&scan, 0x1000, 0x5000, 0, "/a", 2, "ab", 2);
    d9_sym_input_add_map(&scan, 0x9000, 0xa000, 0, "/b", 2, "", 0);
    strcpy(scan.boot_id, "boot-1");
    CHECK(!d9_sym_input_covers(&list, &scan)); /* nothing listed */

    d9_sym_input_add_address(&list, 0x1000, D9_ADDR_RETURN);
    d9_sym_input_add_address(&list, 0x2000, D9_ADDR_RETURN);
    d9_sym_input_add_address(&list, 0x3000, D9_ADDR_RETURN);
    d9_sym_input_add_map(&list, 0x1000, 0x5000, 0, "/a", 2, "ab", 2);
    d9_sym_input_add_map(&list, 0x6000, 0x7000, 0, "/extra", 6, "", 0);
    d9_sym_input_add_map(&list, 0x9000, 0xa000, 0, "/b", 2, "", 0);
    d9_sym_input_add_address(&list, 0x4000, D9_ADDR_RETURN); /* more than the file: fine */
    strcpy(list.boot_id, "boot-1");
    CHECK(!d9_sym_input_covers(&list, &scan)); /* the leaf is a return address in the list */
    d9_sym_input_add_address(&list, 0x1000, D9_ADDR_EXACT);
    CHECK(d9_sym_input_covers(&list, &scan));

    strcpy(list.boot_id, "boot-2");
    CHECK(!d9_sym_input_covers(&list, &scan));
    strcpy(list.boot_id, "boot-1");

    d9_sym_input swapped; /* the maps in the other order: a later map wins, so order counts */
    d9_sym_input_init(&swapped);
    d9_sym_input_add_stack(&swapped, stack, 3, true);
    d9_sym_input_add_map(&swapped, 0x9000, 0xa000, 0, "/b", 2, "", 0);
    d9_sym_input_add_map(&swapped, 0x1000, 0x5000, 0, "/a", 2, "ab", 2);
    strcpy(swapped.boot_id, "boot-1");
    CHECK(!d9_sym_input_covers(&swapped, &scan));
    /* another library at b's range, then b again (dlclose, dlopen): a, b in order now */
    d9_sym_input_add_map(&swapped, 0x9000, 0xa000, 0, "/c", 2, "", 0);
    d9_sym_input_add_map(&swapped, 0x9000, 0xa000, 0, "/b", 2, "", 0);
    CHECK_EQ_U64(swapped.map_count, 4);
    CHECK(d9_sym_input_covers(&swapped, &scan));

    list.oom = true; /* an incomplete list covers nothing */
    CHECK(!d9_sym_input_covers(&list, &scan));
    d9_sym_input_free(&swapped);
    d9_sym_input_free(&list);
    d9_sym_input_free(&scan);
}

int main(void) {
    test_stack_origin_is_no_use();
    test_covers();
    test_hand_built();
    test_skip_plan();
    test_skip_path();
    test_fixture();
    return d9t_summary("test_symbols_scan");
}
