/* The export model and the binary writers: the protobuf encoding, time windows, pairing of
 * starts and ends across streams (unmatched ones, overlaps cut), wakes linked to the poll they
 * caused, samples placed in polls and parks, symbolization (exact, by size, by mapping, inline
 * levels), clipping to a window, and the folded / pprof / perfetto outputs' framing. The
 * formats themselves are checked by independent readers in tests/scripts/test_export*.sh. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "export/export.h"
#include "export_model_of.h"
#include "export/protobuf.h"
#include "format/encoder.h"
#include "format/schemas.h"
#include "test_dial9_park_schemas.h"

/* ---- protobuf writer ---------------------------------------------------------------------- */

static void test_protobuf(void) {
    d9_buf b;
    d9_buf_init(&b);
    d9_pb_uint(&b, 1, 150); /* the protobuf documentation's example: 08 96 01 */
    CHECK_EQ_U64(b.len, 3);
    CHECK(b.data[0] == 0x08 && b.data[1] == 0x96 && b.data[2] == 0x01);
    d9_buf_clear(&b);
    size_t outer = d9_pb_begin(&b, 2);
    size_t inner = d9_pb_begin(&b, 3);
    for (int i = 0; i < 200; i++) d9_put_u8(&b, (uint8_t)i); /* 200 bytes: a 2-byte length */
    d9_pb_end(&b, inner);
    d9_pb_end(&b, outer);
    /* 12 | len(203) = cb 01 | 1a | c8 01 | 200 bytes */
    CHECK_EQ_U64(b.len, 1 + 2 + 1 + 2 + 200);
    CHECK(b.data[0] == 0x12 && b.data[1] == 0xcb && b.data[2] == 0x01);
    CHECK(b.data[3] == 0x1a && b.data[4] == 0xc8 && b.data[5] == 0x01);
    CHECK(b.data[6] == 0 && b.data[205] == 199);
    d9_buf_clear(&b);
    d9_pb_fixed64(&b, 47, 0x0102030405060708ull); /* tag (47 << 3 | 1) = 0x179 -> f9 02 */
    CHECK(b.len == 10 && b.data[0] == 0xf9 && b.data[1] == 0x02 && b.data[2] == 0x08 && b.data[9] == 0x01);
    d9_buf_clear(&b);
    d9_pb_int(&b, 1, -1); /* negative int64: ten bytes */
    CHECK_EQ_U64(b.len, 11);
    d9_buf_clear(&b);
    size_t empty = d9_pb_begin(&b, 5);
    d9_pb_end(&b, empty);
    CHECK(b.len == 2 && b.data[0] == 0x2a && b.data[1] == 0);
    d9_buf_free(&b);
}

/* ---- windows ------------------------------------------------------------------------------ */

/* ---- building traces ---------------------------------------------------------------------- */

typedef struct tb {
    d9_buf b;
    d9_stream_state st;
    uint32_t next_pool_id;
    bool dial9_parks; /* parks declared as dial9 does (and we do now), 0 = not measured */
} tb;

static void tb_stream_with(tb *t, bool dial9_parks) {
    d9_enc_header(&t->b, &t->st);
    for (int i = 0; i < D9_SCH_BUILTIN_COUNT; i++) {
        const d9_schema_def *def = &d9_builtin_schemas[i];
        if (i == D9_SCH_WORKER_PARK || i == D9_SCH_WORKER_UNPARK)
            def = d9_test_park_schema(dial9_parks, i == D9_SCH_WORKER_UNPARK);
        d9_enc_schema(&t->b, (uint16_t)i, def);
    }
    t->next_pool_id = 1;
    t->dial9_parks = dial9_parks;
}

static void tb_stream(tb *t) { tb_stream_with(t, false); }

static uint32_t tb_string(tb *t, const char *s) {
    d9_pool_frame pf;
    uint32_t id = t->next_pool_id++;
    d9_enc_string_pool_begin(&t->b, &pf);
    d9_enc_string_pool_entry(&t->b, &pf, id, s, strlen(s));
    d9_enc_pool_end(&t->b, &pf);
    return id;
}

static uint32_t tb_stack(tb *t, const uint64_t *frames, uint32_t n) {
    d9_pool_frame pf;
    uint32_t id = t->next_pool_id++;
    d9_enc_stack_pool_begin(&t->b, &pf);
    d9_enc_stack_pool_entry(&t->b, &pf, id, frames, n);
    d9_enc_pool_end(&t->b, &pf);
    return id;
}

static void poll_start(tb *t, uint64_t ts, uint64_t worker, uint64_t task, const char *loc) {
    uint32_t s = tb_string(t, loc);
    d9_enc_event(&t->b, &t->st, D9_SCH_POLL_START, ts);
    d9_put_varint(&t->b, worker);
    d9_put_u8(&t->b, 1);
    d9_put_varint(&t->b, task);
    d9_put_u32(&t->b, s);
}

static void poll_end(tb *t, uint64_t ts, uint64_t worker) {
    d9_enc_event(&t->b, &t->st, D9_SCH_POLL_END, ts);
    d9_put_varint(&t->b, worker);
}

static void park_wait(tb *t, uint64_t ts, uint64_t worker, bool unpark, uint64_t cpu, uint64_t wait,
                      uint32_t tid) {
    d9_enc_event(&t->b, &t->st, unpark ? D9_SCH_WORKER_UNPARK : D9_SCH_WORKER_PARK, ts);
    d9_put_varint(&t->b, worker);
    d9_put_u8(&t->b, 0);
    d9_test_put_ns(&t->b, t->dial9_parks, cpu);
    if (unpark) d9_test_put_ns(&t->b, t->dial9_parks, wait); /* sched_wait_ns */
    d9_put_u32(&t->b, tid);
}

static void park(tb *t, uint64_t ts, uint64_t worker, bool unpark, uint64_t cpu, uint32_t tid) {
    park_wait(t, ts, worker, unpark, cpu, 777, tid);
}

static void wake(tb *t, uint64_t ts, uint64_t waker, uint64_t woken, uint8_t from) {
    d9_enc_event(&t->b, &t->st, D9_SCH_WAKE, ts);
    d9_put_varint(&t->b, waker);
    d9_put_varint(&t->b, woken);
    d9_put_u8(&t->b, from);
}

static void sample(tb *t, uint64_t ts, uint64_t worker, uint32_t tid, uint8_t source,
                   const uint64_t *frames, uint32_t n) {
    uint32_t st = tb_stack(t, frames, n);
    d9_enc_event(&t->b, &t->st, D9_SCH_CPU_SAMPLE, ts);
    d9_put_varint(&t->b, worker);
    d9_put_u32(&t->b, tid);
    d9_put_u8(&t->b, source);
    d9_put_u8(&t->b, 0); /* thread_name absent */
    d9_put_u32(&t->b, st);
    d9_put_u8(&t->b, 0); /* cpu absent */
}

static void symbol(tb *t, uint64_t addr, uint64_t size, const char *name, uint64_t depth,
                   const char *file, uint64_t line) {
    uint32_t n = tb_string(t, name), f = tb_string(t, file);
    d9_enc_event(&t->b, &t->st, D9_SCH_SYMBOL_TABLE_ENTRY, 0);
    d9_put_varint(&t->b, addr);
    d9_put_varint(&t->b, size);
    d9_put_u32(&t->b, n);
    d9_put_varint(&t->b, depth);
    d9_put_u32(&t->b, f);
    d9_put_varint(&t->b, line);
}

static void mapping(tb *t, uint64_t start, uint64_t end, uint64_t off, const char *path) {
    uint32_t p = tb_string(t, path);
    d9_enc_event(&t->b, &t->st, D9_SCH_MEMORY_MAP, 10);
    d9_put_varint(&t->b, start);
    d9_put_varint(&t->b, end);
    d9_put_varint(&t->b, off);
    d9_put_u32(&t->b, p);
    d9_put_lstring(&t->b, "abcd", 4);
}

/* Two streams, the second one earlier in time than the first for worker 0. */
static void build_trace(tb *t) {
    d9_buf_init(&t->b);
    memset(&t->st, 0, sizeof t->st);
    tb_stream(t);
    poll_end(t, 300, 0);                  /* ends the poll that starts in stream 2 at 200 */
    poll_end(t, 400, 0);                  /* an end alone */
    park(t, 500, 0, false, 100, 4242);
    poll_start(t, 550, 0, 6, "cut.c:1");  /* starts inside the park: the park ends at 550 */
    park(t, 600, 0, true, 160, 4242);
    poll_end(t, 700, 0);
    poll_start(t, 1000, 1, 5, "five.c:5");
    sample(t, 1100, 1, 99, 0, (const uint64_t[]){0x1000, 0x5010, 0x7010, 0x5100}, 4);
    poll_end(t, 1200, 1);
    wake(t, 1500, 9, 5, 1);               /* -> task 5's poll at 3000 */
    wake(t, 1600, 9, 5, 255);             /* from outside: also -> 3000 */
    poll_start(t, 3000, 1, 5, "five.c:5");
    poll_end(t, 3100, 1);
    wake(t, 3500, 9, 5, 1);               /* no later poll of task 5: no flow */
    sample(t, 3600, 1, 99, 1, (const uint64_t[]){0x1000}, 1);
    tb_stream(t);                         /* stream 2: pools and schemas start over */
    poll_start(t, 100, 0, 3, "lost.c:1"); /* followed by another start: dropped */
    poll_start(t, 200, 0, 4, "four.c:4");
    symbol(t, 0x1000, 0, "outer", 0, "o.c", 1);
    symbol(t, 0x1000, 0, "inner", 1, "i.h", 2);
    symbol(t, 0x5000, 0x100, "ranged", 0, "", 0);
    mapping(t, 0x7000, 0x8000, 0x1000, "/lib/libx.so");
}

static const d9_xpoll *find_poll(const d9_xmodel *m, uint64_t task, uint64_t start) {
    for (size_t i = 0; i < m->poll_count; i++)
        if (m->polls[i].task == task && m->polls[i].start == start) return &m->polls[i];
    return NULL;
}

static void test_model(void) {
    tb t;
    build_trace(&t);
    CHECK(!t.b.failed);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(m != NULL);
    if (!m) return;
    CHECK_EQ_U64(m->first_ts, 10); /* the MemoryMapEvent; SymbolTableEntry's 0 does not count */
    CHECK_EQ_U64(m->last_ts, 3600);
    CHECK_EQ_U64(m->worker_count, 2);
    CHECK(m->workers[0].id == 0 && m->workers[0].tid_known && m->workers[0].tid == 4242);
    CHECK(m->workers[1].id == 1 && m->workers[1].tid_known && m->workers[1].tid == 99);
    CHECK_STR(d9_xm_str(m, m->workers[0].name), "worker 0");
    /* worker 0: [200,300] (across streams), [550,700]; 100 dropped, 400 alone */
    CHECK_EQ_U64(m->unmatched_polls, 2);
    CHECK_EQ_U64(m->poll_count, 4);
    const d9_xpoll *p4 = find_poll(m, 4, 200);
    CHECK(p4 && p4->end == 300 && p4->worker == 0);
    CHECK_STR(p4 ? d9_xm_str(m, p4->loc) : "", "four.c:4");
    const d9_xpoll *p6 = find_poll(m, 6, 550);
    CHECK(p6 && p6->end == 700);
    CHECK_EQ_U64(m->park_count, 1);
    CHECK(m->parks[0].start == 500 && m->parks[0].end == 550); /* cut at the poll's start */
    CHECK_EQ_U64(m->cut_slices, 1);
    CHECK(m->parks[0].has_sched_wait && m->parks[0].sched_wait_ns == 777 && m->parks[0].cpu_ns == 60);
    CHECK_EQ_U64(m->sched_delay_count, 1);
    /* polls sorted by (worker, start), with per-worker ranges */
    CHECK(m->worker_polls[0] == 0 && m->worker_polls[1] == 2 && m->worker_polls[2] == 4);
    for (size_t i = 1; i < m->poll_count; i++)
        CHECK(m->polls[i - 1].worker < m->polls[i].worker ||
              (m->polls[i - 1].worker == m->polls[i].worker && m->polls[i - 1].start <= m->polls[i].start));
    /* wakes */
    CHECK_EQ_U64(m->wake_count, 3);
    const d9_xpoll *late = find_poll(m, 5, 3000);
    CHECK(late != NULL);
    uint32_t late_idx = late ? (uint32_t)(late - m->polls) : D9_XNONE;
    CHECK(m->wakes[0].ts == 1500 && m->wakes[0].target == late_idx && m->wakes[0].from_worker == 1);
    CHECK(m->wakes[1].target == late_idx && m->wakes[1].from_worker == D9_XNONE);
    CHECK(m->wakes[2].target == D9_XNONE);
    CHECK(late && late->wakes_count == 2);
    if (late && late->wakes_count == 2) {
        CHECK_EQ_U64(m->wake_order[late->wakes_first], 0);
        CHECK_EQ_U64(m->wake_order[late->wakes_first + 1], 1);
    }
    /* samples: the first one hit task 5's first poll, the second one no poll */
    CHECK_EQ_U64(m->sample_count, 2);
    const d9_xpoll *early = find_poll(m, 5, 1000);
    CHECK(early && m->samples[0].poll == (uint32_t)(early - m->polls));
    CHECK(m->samples[1].poll == D9_XNONE && !m->samples[1].parked && m->samples[1].source == D9_XSAMPLE_OFFCPU);
    char where[64];
    CHECK_STR(d9_xsample_where(m, &m->samples[0], where, sizeof where), "five.c:5");
    CHECK_STR(d9_xsample_where(m, &m->samples[1], where, sizeof where), "[not in a poll]");
    /* frames of the first sample, root first: 0x5100 (unknown), libx.so+0x1010 (mapping),
     * ranged (by size), outer, inner (inlined into outer) */
    uint32_t *frames = NULL;
    size_t cap = 0;
    long n = d9_xsample_frames(m, &m->samples[0], &frames, &cap);
    const char *want[] = {"0x5100", "libx.so+0x1010", "ranged", "outer", "inner"};
    CHECK_EQ_U64(n, 5);
    for (long i = 0; i < n && i < 5; i++) CHECK_STR(d9_xm_str(m, m->frames[frames[i]].name), want[i]);
    free(frames);
    CHECK_EQ_U64(m->loc_count, 4);
    CHECK_EQ_U64(m->mapping_count, 1);
    uint64_t trace_start = m->from, trace_end = m->to; /* no window: the whole trace */
    d9_xmodel_free(m);

    /* the window [1100, 3050) (absolute), by the rule of every command (common/time_arg.h):
     * a slice is in it when it starts in it. Task 5's poll at 1000 started before --from, so it
     * is out (analyze does not count it either); the one at 3000 is in, drawn cut at 3050;
     * worker 0's are gone */
    d9_xwindow w = {.from = {.set = true, .base = D9_TIME_ABSOLUTE, .ns = 1100},
                    .to = {.set = true, .base = D9_TIME_ABSOLUTE, .ns = 3050}};
    m = d9t_xmodel_of(&t.b, &w);
    CHECK(m != NULL);
    if (m) {
        CHECK(m->from == 1100 && m->to == 3050);
        CHECK_EQ_U64(m->poll_count, 1);
        CHECK(m->polls[0].start == 3000 && m->polls[0].end == 3050);
        CHECK_EQ_U64(m->park_count, 0);
        CHECK_EQ_U64(m->wake_count, 2);
        CHECK_EQ_U64(m->sample_count, 1);
        d9_xmodel_free(m);
    }
    /* the same window counted back from the end and on from the start */
    CHECK(trace_start < 1100 && trace_end > 3050);
    d9_xwindow rel = {.from = {.set = true, .base = D9_TIME_FROM_END, .ns = trace_end - 1100},
                      .to = {.set = true, .base = D9_TIME_FROM_START, .ns = 3050 - trace_start}};
    m = d9t_xmodel_of(&t.b, &rel);
    CHECK(m != NULL);
    if (m) {
        CHECK(m->from == 1100 && m->to == 3050);
        CHECK_EQ_U64(m->poll_count, 1);
        d9_xmodel_free(m);
    }
    /* a window that ends before it starts */
    d9_xwindow bad = {.from = {.set = true, .ns = 100}, .to = {.set = true, .ns = 50}};
    char err[256];
    d9_decoder *d = d9_dec_open_mem(t.b.data, t.b.len, NULL, err, sizeof err);
    m = d9_xmodel_new();
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) d9_xmodel_add(m, &ev);
    d9_dec_close(d);
    CHECK(d9_xmodel_finish(m, &bad, err, sizeof err) != 0 && strstr(err, "--to is not after --from"));
    d9_xmodel_free(m);
    /* only --from, past the end: says so, not "--to is before --from" (there is no --to) */
    d9_xwindow past_end = {.from = {.set = true, .ns = trace_end - trace_start + 1000000000}};
    d = d9_dec_open_mem(t.b.data, t.b.len, NULL, err, sizeof err);
    m = d9_xmodel_new();
    while (d9_dec_next(d, &ev) > 0) d9_xmodel_add(m, &ev);
    d9_dec_close(d);
    CHECK(d9_xmodel_finish(m, &past_end, err, sizeof err) != 0 && strstr(err, "after the trace's end") &&
          !strstr(err, "--to"));
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
}

/* ---- writers ------------------------------------------------------------------------------ */

static char *write_to_memory(const d9_xmodel *m, int (*fn)(const d9_xmodel *, const d9_xopts *, FILE *, char *, size_t),
                             const d9_xopts *o, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    char err[256];
    int rc = fn(m, o, f, err, sizeof err);
    fclose(f);
    CHECK(rc == D9_XWRITE_OK);
    return buf;
}

static void test_writers(void) {
    tb t;
    build_trace(&t);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(m != NULL);
    if (!m) return;
    d9_xopts o;
    d9_xopts_init(&o);
    size_t len;
    char *s = write_to_memory(m, d9_export_folded, &o, &len);
    CHECK_STR(s, "0x5100;libx.so+0x1010;ranged;outer;inner 1\n");
    free(s);
    o.stacks = D9_XSTACKS_ALL;
    o.by_location = true;
    s = write_to_memory(m, d9_export_folded, &o, &len);
    CHECK_STR(s, "[not in a poll];[off-cpu];outer;inner 1\n"
                 "five.c:5;[cpu];0x5100;libx.so+0x1010;ranged;outer;inner 1\n");
    free(s);

    /* pprof: gzip that inflates to a Profile starting with sample_type (field 1) */
    s = write_to_memory(m, d9_export_pprof, &o, &len);
    CHECK(len > 20 && (uint8_t)s[0] == 0x1f && (uint8_t)s[1] == 0x8b);
    unsigned char out[1 << 16];
    z_stream z;
    memset(&z, 0, sizeof z);
    CHECK(inflateInit2(&z, 15 + 16) == Z_OK);
    z.next_in = (unsigned char *)s;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = sizeof out;
    CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
    CHECK(z.total_out > 10 && out[0] == 0x0a);
    inflateEnd(&z);
    free(s);

    /* perfetto: a sequence of Trace.packet fields whose lengths add up to the file */
    s = write_to_memory(m, d9_export_perfetto, &o, &len);
    size_t pos = 0, packets = 0;
    bool framed = true;
    while (pos < len && framed) {
        if ((uint8_t)s[pos] != 0x0a) {
            framed = false;
            break;
        }
        pos++;
        uint64_t n = 0;
        int shift = 0;
        while (pos < len && ((uint8_t)s[pos] & 0x80)) n |= (uint64_t)((uint8_t)s[pos++] & 0x7f) << (shift += 7, shift - 7);
        if (pos < len) n |= (uint64_t)(uint8_t)s[pos++] << shift;
        pos += n;
        packets++;
    }
    CHECK(framed && pos == len);
    CHECK(packets > 10);
    free(s);
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
}

/* An empty trace still gives valid (empty) outputs. */
static void test_empty(void) {
    tb t;
    d9_buf_init(&t.b);
    memset(&t.st, 0, sizeof t.st);
    tb_stream(&t);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(m && m->poll_count == 0 && m->worker_count == 0);
    if (m) {
        d9_xopts o;
        d9_xopts_init(&o);
        size_t len;
        char *s = write_to_memory(m, d9_export_folded, &o, &len);
        CHECK(len == 0);
        free(s);
        s = write_to_memory(m, d9_export_perfetto, &o, &len);
        CHECK(len > 0);
        free(s);
        s = write_to_memory(m, d9_export_pprof, &o, &len);
        CHECK(len > 0);
        free(s);
        d9_xmodel_free(m);
    }
    d9_buf_free(&t.b);
}

/* Parks whose unpark had no schedstat reading (within the recorder's
 * DIAL9_SCHEDSTAT_RESOLUTION_US): no CPU time, no scheduling delay, in a trace that writes
 * them absent (ours) and in one that writes 0 (older ones, dial9's). The park read at both
 * ends has its CPU time; the chrome export carries only what was measured. */
static void check_unread_schedstat(bool dial9_parks) {
    uint64_t none = dial9_parks ? 0 : D9_ABSENT;
    tb t;
    d9_buf_init(&t.b);
    memset(&t.st, 0, sizeof t.st);
    tb_stream_with(&t, dial9_parks);
    park_wait(&t, 100, 0, false, 5000, none, 7);
    park_wait(&t, 200, 0, true, none, none, 7);   /* not read */
    park_wait(&t, 300, 0, false, none, none, 7);  /* not read */
    park_wait(&t, 400, 0, true, 9000, 0, 7);      /* read: a real zero wait */
    park_wait(&t, 500, 0, false, 9100, none, 7);
    park_wait(&t, 600, 0, true, 9150, 20, 7);     /* read at both ends */
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(m && m->park_count == 3);
    if (m && m->park_count == 3) {
        CHECK(!m->parks[0].has_sched_wait && !m->parks[0].has_cpu && m->parks[0].cpu_ns == 0);
        CHECK(m->parks[1].has_sched_wait && m->parks[1].sched_wait_ns == 0 && !m->parks[1].has_cpu);
        CHECK(m->parks[2].has_sched_wait && m->parks[2].sched_wait_ns == 20 && m->parks[2].has_cpu &&
              m->parks[2].cpu_ns == 50);
        CHECK_EQ_U64(m->sched_delay_count, 2);
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        char err[256];
        d9_xopts o;
        d9_xopts_init(&o);
        CHECK(out && d9_export_chrome(m, &o, out, err, sizeof err) == 0);
        if (out) fclose(out);
        CHECK(buf && strstr(buf, "\"args\":{}") != NULL);                         /* park 0 */
        CHECK(buf && strstr(buf, "\"args\":{\"sched_wait_ns\":0}") != NULL);     /* park 1 */
        CHECK(buf && strstr(buf, "\"args\":{\"cpu_time_ns\":50,\"sched_wait_ns\":20}") != NULL);
        free(buf);
    }
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
}

static void metadata(tb *t, uint64_t ts, const char *key, const char *value) {
    d9_enc_event(&t->b, &t->st, D9_SCH_SEGMENT_METADATA, ts);
    d9_pool_frame map;
    d9_enc_string_map_begin(&t->b, &map);
    d9_enc_string_map_entry(&t->b, &map, "service", "svc");
    d9_enc_string_map_entry(&t->b, &map, key, value);
    d9_enc_string_map_end(&t->b, &map);
}

/* Runtime names from every metadata event: worker 1 registered after the segment started is
 * named only by the metadata the recorder wrote again then. */
static void test_runtime_metadata_later(void) {
    tb t;
    d9_buf_init(&t.b);
    memset(&t.st, 0, sizeof t.st);
    tb_stream(&t);
    metadata(&t, 10, "runtime.io", "0");
    poll_start(&t, 20, 0, 5, "a.c:1");
    poll_end(&t, 30, 0);
    metadata(&t, 40, "runtime.io", "0,1");
    poll_start(&t, 50, 1, 6, "a.c:1");
    poll_end(&t, 60, 1);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(m && m->worker_count == 2);
    if (m && m->worker_count == 2) {
        CHECK(m->workers[0].runtime && strcmp(d9_xm_str(m, m->workers[0].runtime), "io") == 0);
        CHECK(m->workers[1].runtime && strcmp(d9_xm_str(m, m->workers[1].runtime), "io") == 0);
    }
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
}

static void test_unread_schedstat(void) {
    check_unread_schedstat(false);
    check_unread_schedstat(true);
}

int main(void) {
    test_unread_schedstat();
    test_runtime_metadata_later();
    test_protobuf();
    test_model();
    test_writers();
    test_empty();
    return d9t_summary("test_export_model");
}
