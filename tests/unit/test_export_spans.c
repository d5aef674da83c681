/* Spans in the export model (export/export_spans.c): paired and split as the analysis does
 * (model/spans.h), overlapping spans of one name on separate lanes, unended ones drawn to the
 * trace's end. With --write-trace PATH it only writes its hand-built trace, for
 * tests/scripts/test_export_spans.sh to export and read back with Perfetto's protos. */
#include <stdio.h>

#include "check.h"
#include "export/export_model.h"
#include "test_analysis_builder.h"

static void tb_span_schemas(tb *t) {
    d9_enc_schema(&t->b, D9_SCH_SPAN_ENTER, &d9_builtin_schemas[D9_SCH_SPAN_ENTER]);
    d9_enc_schema(&t->b, D9_SCH_SPAN_EXIT, &d9_builtin_schemas[D9_SCH_SPAN_EXIT]);
}

static void tb_span(tb *t, bool enter, uint64_t ts, uint64_t worker, uint64_t id, uint32_t name,
                    uint64_t task) {
    d9_enc_event(&t->b, &t->st, enter ? D9_SCH_SPAN_ENTER : D9_SCH_SPAN_EXIT, ts);
    d9_put_varint(&t->b, worker);
    d9_put_varint(&t->b, id);
    if (enter) d9_put_u8(&t->b, 0); /* no parent */
    d9_put_u32(&t->b, name);
    d9_put_varint(&t->b, task);
    d9_put_u32(&t->b, 100 + (uint32_t)worker);
}

/* Two requests that overlap (ids 1 and 2), both begun in task 1's polls on worker 0 and ended
 * in task 2's on worker 1 (woken by task 1); a "flush" span never ended. */
static void build(tb *t) {
    tb_stream(t);
    tb_span_schemas(t);
    uint32_t loc = tb_string(t, "server.c:10");
    uint32_t req = tb_string(t, "request");
    uint32_t flush = tb_string(t, "flush");
    const uint64_t base = 1000 * MS;
    tb_poll_start(t, base + 100 * US, 0, 0, 1, loc);
    tb_span(t, true, base + 150 * US, 0, 1, req, 1);
    tb_wake(t, base + 180 * US, 1, 2, 1);
    tb_poll_end(t, base + 200 * US, 0);
    tb_poll_start(t, base + 300 * US, 0, 0, 1, loc);
    tb_span(t, true, base + 310 * US, 0, 2, req, 1);
    tb_span(t, true, base + 320 * US, 0, 9, flush, 1);
    tb_poll_end(t, base + 350 * US, 0);
    tb_poll_start(t, base + 400 * US, 1, 0, 2, loc);
    tb_span(t, false, base + 450 * US, 1, 1, req, 2);
    tb_span(t, false, base + 460 * US, 1, 2, req, 2);
    tb_poll_end(t, base + 500 * US, 1);
    tb_poll(t, base + 900 * US, 100 * US, 0, 0, 1, loc); /* the trace ends at +1000 us */
}

int main(int argc, char **argv) {
    tb t = {0};
    build(&t);
    if (argc == 3 && strcmp(argv[1], "--write-trace") == 0) {
        FILE *f = fopen(argv[2], "wb");
        bool ok = f && fwrite(t.b.data, 1, t.b.len, f) == t.b.len;
        if (f && fclose(f) != 0) ok = false;
        d9_buf_free(&t.b);
        return ok ? 0 : 1;
    }
    char err[256];
    d9_decoder *d = d9_dec_open_mem(t.b.data, t.b.len, NULL, err, sizeof err);
    CHECK(d != NULL);
    d9_xmodel *m = d9_xmodel_new();
    d9_event ev;
    while (d && m && d9_dec_next(d, &ev) > 0) CHECK(d9_xmodel_add(m, &ev) == 0);
    if (d) d9_dec_close(d);
    CHECK(m && d9_xmodel_finish(m, NULL, err, sizeof err) == 0);
    const uint64_t base = 1000 * MS;
    if (m) {
        CHECK_EQ_U64(m->span_count, 3);
        CHECK_EQ_U64(m->span_name_count, 2);
        CHECK_EQ_U64(m->span_stray_ends, 0);
    }
    if (m && m->span_count == 3) {
        const d9_xspan *a = &m->spans[0], *b = &m->spans[1], *f = &m->spans[2];
        CHECK_STR(d9_xm_str(m, a->name), "request");
        CHECK_EQ_U64(a->id, 1);
        CHECK_EQ_U64(a->start, base + 150 * US);
        CHECK_EQ_U64(a->end, base + 450 * US);
        CHECK(a->ended);
        CHECK_EQ_U64(a->lane, 0);
        /* 150..200 and 300..350 task 1, 400..450 task 2; queued 200..300 and 350..400 (task 2
         * woken at 180 during task 1's poll, first polled at 400); no wait, nothing unknown */
        CHECK_EQ_U64(a->parts.poll_ns, 150 * US);
        CHECK_EQ_U64(a->parts.queued_ns, 150 * US);
        CHECK_EQ_U64(a->parts.wait_ns, 0);
        CHECK_EQ_U64(a->parts.unknown_ns, 0);
        CHECK_EQ_U64(b->id, 2);
        CHECK_EQ_U64(b->lane, 1); /* overlaps request 1 */
        CHECK_EQ_U64(b->parts.poll_ns + b->parts.queued_ns + b->parts.wait_ns + b->parts.unknown_ns,
                     b->end - b->start);
        CHECK_STR(d9_xm_str(m, f->name), "flush");
        CHECK(!f->ended);
        CHECK_EQ_U64(f->end, base + 1000 * US); /* drawn to the trace's end */
        CHECK_EQ_U64(f->lane, 0);
        /* task 1 after its poll at 350: waits for a wake until its poll at 900 */
        CHECK_EQ_U64(f->parts.poll_ns, 30 * US + 100 * US);
        CHECK_EQ_U64(f->parts.wait_ns, 550 * US);
        CHECK_EQ_U64(f->parts.unknown_ns, 0);
        CHECK_EQ_U64(m->span_name_lanes[a->name_index], 2);
        CHECK_EQ_U64(m->span_name_lanes[f->name_index], 1);
    }
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
    return d9t_summary("export_spans");
}
