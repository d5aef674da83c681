/* d9_dec_next_run (format/decoder.h) returns what d9_dec_next returns: the same events with
 * the same schema, time, offset, stream, type id, implausibility and values, and the decoder
 * ends in the same state with the same stats and message, however the runs are cut.
 *
 * The trace has everything a run must leave to d9_dec_next: a stream's metadata (an unbounded
 * schema), clock syncs (the plausible range moves), a time more than a day past them
 * (implausible), a pool id used before its definition (unresolved when read), symbols
 * (strings), timestamp resets, a second stream, damaged bytes skipped to the next stream
 * header, and a torn last frame; and runs of bounded events long enough to fill a run's
 * events and values. It is read four ways against d9_dec_next alone: in memory with the
 * fold's run sizes, with runs of 1 to 7 events and a few values, streamed from a FILE in
 * small chunks (a run ends where the buffer does), and with scan mode on (no runs). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_analysis_builder.h"

static int g_failed;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                             \
            g_failed = 1;                                                                      \
        }                                                                                      \
    } while (0)

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); }

static uint64_t hash_value(const d9_value *v) {
    uint64_t h = mix(mix(mix(mix(0, v->type), v->present), v->resolved), v->pool_id);
    if (!v->present) return h;
    switch (v->type) {
    case D9_FT_STRING: case D9_FT_BYTES: case D9_FT_POOLED_STRING:
        h = mix(h, v->str.len);
        for (uint32_t i = 0; i < v->str.len; i++) h = mix(h, (uint8_t)v->str.ptr[i]);
        return h;
    case D9_FT_STACK: case D9_FT_POOLED_STACK:
        h = mix(h, v->stack.count);
        for (uint32_t i = 0; i < v->stack.count; i++) h = mix(h, v->stack.addrs[i]);
        return h;
    case D9_FT_STRING_MAP:
        for (uint32_t i = 0; i < v->map.count; i++) {
            const d9_dec_kv *kv = &v->map.items[i];
            for (uint32_t k = 0; k < kv->key.len; k++) h = mix(h, (uint8_t)kv->key.ptr[k]);
            for (uint32_t k = 0; k < kv->value.len; k++) h = mix(h, (uint8_t)kv->value.ptr[k]);
        }
        return h;
    case D9_FT_DYN_LIST: case D9_FT_DYN_MAP: return mix(h, v->list.count);
    default: return mix(h, v->u);
    }
}

/* Everything d9_dec_next says of one event, as one number. */
static uint64_t hash_event(const d9_event *ev) {
    uint64_t h = mix(mix(mix(0, ev->schema->index), ev->ts_ns), ev->offset);
    h = mix(mix(mix(h, ev->stream), ev->type_id), ev->implausible_ts);
    for (uint16_t i = 0; i < ev->schema->field_count; i++) h = mix(h, hash_value(&ev->values[i]));
    return h;
}

typedef struct reading {
    uint64_t *ev;
    size_t n, cap, from_runs;
    d9_dec_status status;
    char msg[512];
    uint64_t stop;
    d9_dec_stats st;
} reading;

static void note(reading *r, const d9_event *ev) {
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->ev = realloc(r->ev, r->cap * sizeof *r->ev);
        if (!r->ev) abort();
    }
    r->ev[r->n++] = hash_event(ev);
}

/* Read all of d: with runs of at most max_events events and max_values values when max_events
 * is not 0, each run's events noted before the next call, as dial9 fold does. */
static reading read_all(d9_decoder *d, uint32_t max_events, uint32_t max_values) {
    reading r = {0};
    d9_event ev, run[64];
    d9_value vals[1024];
    for (;;) {
        int n = max_events ? d9_dec_next_run(d, run, max_events, vals, max_values) : 0;
        for (int i = 0; i < n; i++) note(&r, &run[i]);
        r.from_runs += (size_t)n;
        if (n > 0) continue;
        if (d9_dec_next(d, &ev) <= 0) break;
        note(&r, &ev);
    }
    r.status = d9_dec_state(d);
    snprintf(r.msg, sizeof r.msg, "%s", d9_dec_message(d));
    r.stop = d9_dec_stop_offset(d);
    r.st = *d9_dec_get_stats(d);
    d9_dec_close(d);
    return r;
}

static void same(const reading *want, const reading *got, const char *how) {
    CHECK(got->n == want->n, "%s: %zu events, d9_dec_next alone %zu", how, got->n, want->n);
    for (size_t i = 0; i < got->n && i < want->n; i++)
        if (got->ev[i] != want->ev[i]) {
            CHECK(0, "%s: event %zu differs from d9_dec_next's", how, i);
            break;
        }
    CHECK(got->status == want->status, "%s: status %d, d9_dec_next alone %d", how, got->status, want->status);
    CHECK(strcmp(got->msg, want->msg) == 0, "%s: message \"%s\", d9_dec_next alone \"%s\"", how, got->msg, want->msg);
    CHECK(got->stop == want->stop, "%s: stop offset %" PRIu64 ", d9_dec_next alone %" PRIu64, how, got->stop, want->stop);
    const d9_dec_stats *a = &got->st, *b = &want->st;
#define SAME(f) CHECK(a->f == b->f, "%s: stats." #f " %" PRIu64 ", d9_dec_next alone %" PRIu64, how, (uint64_t)a->f, (uint64_t)b->f)
    SAME(streams); SAME(schema_frames); SAME(timestamp_resets); SAME(string_pool_frames);
    SAME(stack_pool_frames); SAME(events); SAME(bytes); SAME(input_bytes);
    SAME(string_pool_entries); SAME(stack_pool_entries); SAME(unresolved_refs);
    SAME(late_definitions); SAME(undefined_pool_ids); SAME(damaged_regions); SAME(damaged_bytes);
    SAME(first_damage_offset); SAME(torn_tail); SAME(implausible_times); SAME(first_implausible_ts);
    SAME(first_implausible_offset); SAME(clock_sync_first_ns); SAME(clock_sync_last_ns);
#undef SAME
}

static void clock_sync(tb *t, uint64_t ts, uint64_t real) {
    d9_enc_event(&t->b, &t->st, D9_SCH_CLOCK_SYNC, ts);
    d9_put_varint(&t->b, real);
}

/* A round of bounded events, as a runtime writes them. */
static void rounds(tb *t, uint64_t *ts, int n, uint32_t loc, uint32_t stack) {
    for (int r = 0; r < n; r++) {
        uint64_t w = (uint64_t)r % 3;
        *ts += 1000 + (uint64_t)(r * 7919 % 5000);
        tb_wake(t, *ts, 10 + (uint64_t)r, 11 + (uint64_t)r, (uint8_t)w);
        tb_poll(t, *ts + 100, 2000 + (uint64_t)(r * 104729 % 300000), w, (uint8_t)(r % 5), 11 + (uint64_t)r, loc);
        *ts += 400000;
        if (r % 2 == 0) {
            tb_park(t, *ts, w, 1000 + (uint64_t)r, 100 + (uint32_t)w);
            if (r % 8 == 0) tb_sample(t, *ts + 10, w, 100 + (uint32_t)w, 0, stack);
            tb_unpark(t, *ts + 900, w, 1200 + (uint64_t)r, 30 + (uint64_t)(r % 500), 100 + (uint32_t)w);
            *ts += 1000;
        }
    }
}

static void build(tb *t) {
    uint64_t ts = 5000000000ull;
    const char *meta[] = {"service", "runs", "host", "h", NULL};
    tb_stream_dial9_parks(t);
    tb_metadata(t, ts, meta);
    clock_sync(t, ts, 1796558400000000000ull);
    uint32_t loc = tb_string(t, "src/a.rs:1");
    uint64_t addrs[3] = {0x401000, 0x401100, 0x401200};
    uint32_t stack = tb_stack(t, addrs, 3);
    rounds(t, &ts, 300, loc, stack);
    /* a pool id used before its definition: unresolved when read, defined just after */
    uint32_t late = t->next_pool++;
    tb_poll(t, ts + 10, 5000, 1, 0, 7, late);
    d9_pool_frame pf;
    d9_enc_string_pool_begin(&t->b, &pf);
    d9_enc_string_pool_entry(&t->b, &pf, late, "src/late.rs:9", 13);
    d9_enc_pool_end(&t->b, &pf);
    ts += 10000;
    rounds(t, &ts, 100, late, stack);
    /* a time more than a day past the clock syncs: implausible, and back */
    uint64_t far = ts + 25 * 3600 * 1000000000ull;
    tb_wake(t, far, 1, 2, 0);
    tb_poll(t, far + 10, 100, 0, 0, 2, loc);
    rounds(t, &ts, 40, loc, stack);
    /* a second clock sync widens the range: that time is plausible after it */
    clock_sync(t, ts + 1, 1796558400000000000ull + (ts + 1 - 5000000000ull));
    ts += 1000;
    tb_symbol(t, 0x401000, 0x100, "main", 0, "src/main.rs", 1);
    rounds(t, &ts, 100, loc, stack);
    /* a second stream: its own pools and type ids */
    tb_stream_dial9_parks(t);
    clock_sync(t, ts, 1796558400000000000ull + (ts - 5000000000ull));
    loc = tb_string(t, "src/b.rs:2");
    stack = tb_stack(t, addrs, 2);
    rounds(t, &ts, 200, loc, stack);
    /* damage, skipped to the next stream header */
    static const uint8_t junk[] = {D9_FRAME_EVENT, 0xff, 0x7f, 0x01, 0x02, 0x03, 0x09, 0x09};
    for (size_t i = 0; i < sizeof junk; i++) d9_put_u8(&t->b, junk[i]);
    tb_stream_dial9_parks(t);
    clock_sync(t, ts, 1796558400000000000ull + (ts - 5000000000ull));
    loc = tb_string(t, "src/c.rs:3");
    stack = tb_stack(t, addrs, 1);
    rounds(t, &ts, 150, loc, stack);
    /* a torn last frame */
    tb_poll_start(t, ts + 5, 1, 0, 99, loc);
    t->b.len -= 2;
}

static bool keep_all(const d9_dec_schema *s, void *ctx) {
    (void)s;
    (void)ctx;
    return true;
}

int main(void) {
    tb t = {0};
    build(&t);
    if (t.b.failed) {
        fprintf(stderr, "FAIL: building the trace\n");
        return 1;
    }
    d9_dec_options opt;
    d9_dec_options_init(&opt);
    reading want = read_all(d9_dec_open_mem(t.b.data, t.b.len, &opt, NULL, 0), 0, 0);
    CHECK(want.n > 3000, "the trace has %zu events", want.n);
    CHECK(want.status == D9_DEC_DAMAGED, "the trace reads as damaged (status %d)", want.status);
    CHECK(want.st.implausible_times > 0, "the trace has an implausible time");
    CHECK(want.st.unresolved_refs > 0 && want.st.late_definitions > 0, "the trace has a late pool definition");
    CHECK(want.st.torn_tail, "the trace ends in a torn frame");

    /* the fold's run sizes */
    reading fold = read_all(d9_dec_open_mem(t.b.data, t.b.len, &opt, NULL, 0), 64, 64 * 12);
    same(&want, &fold, "runs of 64 events");
    CHECK(fold.from_runs * 10 > fold.n * 9, "runs read %zu of %zu events (the bounded ones are most)", fold.from_runs, fold.n);

    /* runs of 1 to 7 events and few values: they end at every event count and value bound */
    for (uint32_t k = 1; k <= 7; k++) {
        char how[64];
        snprintf(how, sizeof how, "runs of %u events, %u values", k, 3 + k);
        reading r = read_all(d9_dec_open_mem(t.b.data, t.b.len, &opt, NULL, 0), k, 3 + k);
        same(&want, &r, how);
        CHECK(r.from_runs > 0, "%s: no event read by a run", how);
        free(r.ev);
    }

    /* streamed in small chunks: a run ends where the buffered bytes do, d9_dec_next refills */
    for (size_t chunk = 7; chunk <= 300; chunk += 97) {
        char how[64];
        snprintf(how, sizeof how, "streamed in chunks of %zu bytes", chunk);
        d9_dec_options small = opt;
        small.chunk_bytes = chunk;
        FILE *a = fmemopen(t.b.data, t.b.len, "rb"), *b = fmemopen(t.b.data, t.b.len, "rb");
        if (!a || !b) {
            fprintf(stderr, "FAIL: fmemopen\n");
            return 1;
        }
        reading w = read_all(d9_dec_open_file(a, &small, NULL, 0), 0, 0);
        reading r = read_all(d9_dec_open_file(b, &small, NULL, 0), 64, 64 * 12);
        same(&w, &r, how);
        CHECK(r.from_runs > 0, "%s: no event read by a run", how);
        fclose(a);
        fclose(b);
        free(w.ev);
        free(r.ev);
    }

    /* not before the first d9_dec_next (the input's kind is not known yet), and not in scan
     * mode (the reader's keep decides what d9_dec_next returns) */
    d9_decoder *d = d9_dec_open_mem(t.b.data, t.b.len, &opt, NULL, 0);
    d9_event ev[8], one;
    d9_value vals[64];
    CHECK(d && d9_dec_next_run(d, ev, 8, vals, 64) == 0, "a run before the first d9_dec_next");
    d9_dec_set_scan(d, &(d9_dec_scan){.keep = keep_all});
    CHECK(d9_dec_next(d, &one) > 0 && d9_dec_next_run(d, ev, 8, vals, 64) == 0, "a run in scan mode");
    d9_dec_close(d);

    free(want.ev);
    free(fold.ev);
    free(t.b.data);
    if (g_failed) return 1;
    printf("PASS\n");
    return 0;
}
