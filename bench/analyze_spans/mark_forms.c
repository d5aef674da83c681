/* d9_bench_mark_forms: what a span mark costs to decode in each of two forms (issue 34's
 * proposed DIAL9_SPAN_MARKS=events|poll, docs/analyze.md "Performance"). A prototype of the
 * format only: nothing writes or reads the poll form outside this program.
 *
 *   d9_bench_mark_forms write OUT.bin REQUESTS none|events|poll|poll_ids
 *   d9_bench_mark_forms decode IN.bin
 *
 * write: REQUESTS requests of the libuv demo's shape on one worker (a poll of the connection's
 * task, in which the span begins and a write task is spawned; the write task's wake, its poll,
 * in which the span ends; its termination), the marks
 *   none    left out (the baseline),
 *   events  as SpanEnterEvent / SpanExitEvent (what the recorder writes),
 *   poll    carried by the end of the poll they are made in: a second PollEndEvent schema,
 *           dial9's worker_id first, then span_begin_name, span_begin_id, span_begin_ns,
 *           span_end_name, span_end_id, span_end_ns (each optional: a presence byte; _ns is
 *           the mark's time after the poll's start); polls without marks keep the plain one,
 *   poll_ids the same with the names' pool ids as optional Varints: every field then on the
 *           decoder's bounded field plan (read_run has no optional PooledString), what
 *           the poll form would cost with that op added to format/decoder.c.
 * decode: every event through the decoder (d9_dec_next), each mark's name, id, task and time
 * read as a reader of it would (the events' by their bindings, the poll form's by field index
 * cached per schema); prints the marks found and a checksum of what was read. Count it with
 * callgrind: (a form's count - none's) / marks is a mark's decoding cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/decoder.h"
#include "format/encoder.h"
#include "format/schemas.h"

#define POLL_END_MARKS 200 /* the type id of the poll form's PollEndEvent */

enum { F_BEGIN_NAME, F_BEGIN_ID, F_BEGIN_NS, F_END_NAME, F_END_ID, F_END_NS, F_MARKS };

static const d9_schema_field poll_end_marks_fields[] = {
    {"worker_id", D9_FT_VARINT},
    {"span_begin_name", D9_FT_OPTIONAL | D9_FT_POOLED_STRING},
    {"span_begin_id", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_begin_ns", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_end_name", D9_FT_OPTIONAL | D9_FT_POOLED_STRING},
    {"span_end_id", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_end_ns", D9_FT_OPTIONAL | D9_FT_VARINT},
};
static const d9_schema_field poll_end_mark_ids_fields[] = {
    {"worker_id", D9_FT_VARINT},
    {"span_begin_name", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_begin_id", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_begin_ns", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_end_name", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_end_id", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"span_end_ns", D9_FT_OPTIONAL | D9_FT_VARINT},
};
static const d9_schema_def poll_end_marks = {"PollEndEvent", true, 7, poll_end_marks_fields};
static const d9_schema_def poll_end_mark_ids = {"PollEndEvent", true, 7, poll_end_mark_ids_fields};

static uint32_t pool_string(d9_buf *b, uint32_t id, const char *s) {
    d9_pool_frame pf;
    d9_enc_string_pool_begin(b, &pf);
    d9_enc_string_pool_entry(b, &pf, id, s, strlen(s));
    d9_enc_pool_end(b, &pf);
    return id;
}

static void poll_start(d9_buf *b, d9_stream_state *st, uint64_t ts, uint64_t task, uint32_t loc) {
    d9_enc_event(b, st, D9_SCH_POLL_START, ts);
    d9_put_varint(b, 0); /* worker */
    d9_put_u8(b, 0);     /* local queue */
    d9_put_varint(b, task);
    d9_put_u32(b, loc);
}

static void span_event(d9_buf *b, d9_stream_state *st, bool enter, uint64_t ts, uint64_t id, uint32_t name,
                       uint64_t task) {
    d9_enc_event(b, st, enter ? D9_SCH_SPAN_ENTER : D9_SCH_SPAN_EXIT, ts);
    d9_put_varint(b, 0);
    d9_put_varint(b, id);
    if (enter) d9_put_u8(b, 0); /* no parent */
    d9_put_u32(b, name);
    d9_put_varint(b, task);
    d9_put_u32(b, 7); /* tid */
}

static void opt_varint(d9_buf *b, bool present, uint64_t v) {
    d9_put_u8(b, present);
    if (present) d9_put_varint(b, v);
}

static bool names_as_ids; /* the poll_ids form */

static void opt_name(d9_buf *b, bool present, uint32_t v) {
    d9_put_u8(b, present);
    if (present && names_as_ids) d9_put_varint(b, v);
    else if (present) d9_put_u32(b, v);
}

/* The poll end carrying a begin (begin true) or an end made `after` ns into the poll. */
static void poll_end_mark(d9_buf *b, d9_stream_state *st, uint64_t ts, bool begin, uint32_t name, uint64_t id,
                          uint64_t after) {
    d9_enc_event(b, st, POLL_END_MARKS, ts);
    d9_put_varint(b, 0);
    opt_name(b, begin, name);
    opt_varint(b, begin, id);
    opt_varint(b, begin, after);
    opt_name(b, !begin, name);
    opt_varint(b, !begin, id);
    opt_varint(b, !begin, after);
}

static void poll_end(d9_buf *b, d9_stream_state *st, uint64_t ts) {
    d9_enc_event(b, st, D9_SCH_POLL_END, ts);
    d9_put_varint(b, 0);
}

static int write_trace(const char *path, long requests, const char *form) {
    names_as_ids = strcmp(form, "poll_ids") == 0;
    int marks = strcmp(form, "events") == 0                 ? 1
                : strcmp(form, "poll") == 0 || names_as_ids ? 2
                : strcmp(form, "none") == 0                 ? 0
                                                            : -1;
    if (marks < 0) {
        fprintf(stderr, "d9_bench_mark_forms: form is none, events, poll or poll_ids, not %s\n", form);
        return 2;
    }
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state st = {0};
    d9_enc_header(&b, &st);
    static const uint16_t used[] = {D9_SCH_POLL_START, D9_SCH_POLL_END, D9_SCH_WAKE, D9_SCH_TASK_SPAWN,
                                    D9_SCH_TASK_TERMINATE, D9_SCH_SPAN_ENTER, D9_SCH_SPAN_EXIT};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) d9_enc_schema(&b, used[i], &d9_builtin_schemas[used[i]]);
    if (marks == 2) d9_enc_schema(&b, POLL_END_MARKS, names_as_ids ? &poll_end_mark_ids : &poll_end_marks);
    uint32_t on_read = pool_string(&b, 1, "src/http_conn.c:on_read"), on_written = pool_string(&b, 2, "on_written");
    uint32_t name = pool_string(&b, 3, "http_request");
    uint64_t ts = 1000000000000ull;
    for (long r = 0; r < requests; r++) {
        uint64_t conn = 1 + (uint64_t)(r % 16), write = 1000 + (uint64_t)r;
        ts += 1000;
        poll_start(&b, &st, ts, conn, on_read);
        if (marks == 1) span_event(&b, &st, true, ts + 10, (uint64_t)r, name, conn);
        d9_enc_event(&b, &st, D9_SCH_TASK_SPAWN, ts + 20);
        d9_put_varint(&b, write);
        d9_put_u32(&b, on_written);
        d9_put_u8(&b, 1); /* instrumented */
        if (marks == 2) poll_end_mark(&b, &st, ts + 30, true, name, (uint64_t)r, 10);
        else poll_end(&b, &st, ts + 30);
        d9_enc_event(&b, &st, D9_SCH_WAKE, ts + 200);
        d9_put_varint(&b, write);
        d9_put_varint(&b, write);
        d9_put_u8(&b, 0);
        poll_start(&b, &st, ts + 220, write, on_written);
        if (marks == 1) span_event(&b, &st, false, ts + 600, (uint64_t)r, name, write);
        if (marks == 2) poll_end_mark(&b, &st, ts + 620, false, name, (uint64_t)r, 380);
        else poll_end(&b, &st, ts + 620);
        d9_enc_event(&b, &st, D9_SCH_TASK_TERMINATE, ts + 630);
        d9_put_varint(&b, write);
    }
    FILE *f = b.failed ? NULL : fopen(path, "wb");
    size_t ok = f ? fwrite(b.data, 1, b.len, f) : 0;
    int rc = f ? fclose(f) : -1;
    int failed = !f || ok != b.len || rc != 0;
    if (failed) fprintf(stderr, "d9_bench_mark_forms: cannot write %s\n", path);
    else printf("%s: %ld requests, marks %s, %zu bytes\n", path, requests, form, b.len);
    d9_buf_free(&b);
    return failed;
}

/* Field i's integer, or a pooled string's pool id (as readers intern names by it). */
static uint64_t uint_at(const d9_event *ev, int i, bool *present) {
    uint64_t v = 0;
    *present = false;
    if (i < 0) return 0;
    const d9_value *x = &ev->values[i];
    if (x->type == D9_FT_POOLED_STRING) {
        *present = x->present;
        return x->pool_id;
    }
    *present = d9_value_uint(x, &v);
    return v;
}

static int decode(const char *path) {
    char err[256];
    d9_dec_options opt;
    d9_dec_options_init(&opt);
    d9_decoder *d = d9_dec_open_path(path, &opt, err, sizeof err);
    if (!d) {
        fprintf(stderr, "d9_bench_mark_forms: %s\n", err);
        return 1;
    }
    /* the poll form's fields, found once per schema (a reader's binding would hold them) */
    const d9_dec_schema *bound = NULL;
    int fi[F_MARKS] = {0};
    static const char *const names[F_MARKS] = {"span_begin_name", "span_begin_id", "span_begin_ns",
                                               "span_end_name",   "span_end_id",   "span_end_ns"};
    uint64_t events = 0, marks = 0, sum = 0;
    d9_event ev;
    while (d9_dec_next(d, &ev) == 1) {
        events++;
        const d9_dec_binding *in = &ev.schema->bind;
        bool p;
        switch (in->role) {
        case D9_SCH_SPAN_ENTER:
        case D9_SCH_SPAN_EXIT:
            marks++;
            sum += uint_at(&ev, in->field[D9_KF_SPAN_ID], &p) + uint_at(&ev, in->field[D9_KF_SPAN_NAME], &p) +
                   uint_at(&ev, in->field[D9_KF_TASK_ID], &p) + ev.ts_ns;
            break;
        case D9_SCH_POLL_END:
            if (ev.schema->field_count == 1) break; /* the plain one: no marks */
            if (ev.schema != bound) {
                for (int i = 0; i < F_MARKS; i++) fi[i] = d9_schema_field_index(ev.schema, names[i]);
                bound = ev.schema;
            }
            for (int k = 0; k < 2; k++) { /* its begin, its end */
                uint64_t name = uint_at(&ev, fi[3 * k], &p);
                if (!p) continue;
                marks++;
                sum += name + uint_at(&ev, fi[3 * k + 1], &p) + uint_at(&ev, fi[3 * k + 2], &p) + ev.ts_ns;
            }
            break;
        default: break;
        }
    }
    int rc = d9_dec_state(d) == D9_DEC_END ? 0 : 1;
    if (rc) fprintf(stderr, "d9_bench_mark_forms: %s\n", d9_dec_message(d));
    printf("%s: %llu events, %llu marks, checksum %llu\n", path, (unsigned long long)events,
           (unsigned long long)marks, (unsigned long long)sum);
    d9_dec_close(d);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "write") == 0) return write_trace(argv[2], atol(argv[3]), argv[4]);
    if (argc == 3 && strcmp(argv[1], "decode") == 0) return decode(argv[2]);
    fprintf(stderr, "usage: d9_bench_mark_forms write OUT.bin REQUESTS none|events|poll|poll_ids\n"
                    "       d9_bench_mark_forms decode IN.bin\n");
    return 2;
}
