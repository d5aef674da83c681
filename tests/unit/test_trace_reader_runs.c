/* d9_read_trace_files (cli/trace_reader.c) reads bounded events a run at a time
 * (d9_dec_next_run) and the rest by d9_dec_next: the callback must still see every event
 * d9_dec_next alone returns, in order, and the file's result (status, message, stats) must be
 * what d9_dec_next alone leaves. When the callback stops the reading inside a run, the
 * decoder has counted the whole run; the result must count only the events handed out, with
 * `bytes` at the next event's offset, as d9_dec_next counts them (its read-ahead is synced to
 * the events handed out).
 *
 * Inputs: the demo fixture (../shared/fixtures/dial9-demo-trace.bin, dial9's: short runs
 * between its pool frames, so the reader leaves most of it to d9_dec_next) whole, and cut
 * inside a frame (a torn tail); and a trace as ours are (runs of dozens of events between a
 * few pool frames), built here. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli/trace_reader.h"
#include "unit/test_analysis_builder.h"

/* What identifies an event in its file: where it is, its schema, its time. */
static uint64_t event_key(const d9_event *ev) {
    return (ev->offset * 1000003u + ev->schema->index) * 1000003u + ev->ts_ns + ev->stream;
}

typedef struct seen {
    uint64_t *keys;
    size_t n, cap;
    size_t stop_after; /* stop when this many events were handed out; SIZE_MAX: never */
} seen;

static int on_event(void *ctx, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    (void)dec;
    (void)file_index;
    seen *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->keys = realloc(s->keys, s->cap * sizeof *s->keys);
        if (!s->keys) abort();
    }
    s->keys[s->n++] = event_key(ev);
    return s->n == s->stop_after;
}

/* d9_dec_next alone over `path`, up to `stop_after` events: the keys and the stats then. */
static void reference(const char *path, seen *s, d9_dec_stats *st, d9_dec_status *status) {
    d9_decoder *d = d9_dec_open_path(path, NULL, NULL, 0);
    CHECK(d != NULL);
    if (!d) return;
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0)
        if (on_event(s, &ev, d, 0)) break;
    *st = *d9_dec_get_stats(d);
    *status = d9_dec_state(d);
    if (*status == D9_DEC_RUNNING) *status = D9_DEC_END;
    d9_dec_close(d);
}

/* The reader against the reference, stopping after `stop_after` events. */
static void compare(const char *path, size_t stop_after) {
    seen want = {.stop_after = stop_after}, got = {.stop_after = stop_after};
    d9_dec_stats st = {0};
    d9_dec_status status = D9_DEC_ERROR;
    reference(path, &want, &st, &status);
    char *p = (char *)path;
    d9_path_list paths = {.paths = &p, .count = 1};
    d9_file_result r;
    (void)d9_read_trace_files(&paths, on_event, &got, &r);
    CHECK_EQ_U64(got.n, want.n);
    CHECK(got.n == want.n && (want.n == 0 || !memcmp(got.keys, want.keys, want.n * sizeof *want.keys)));
    CHECK_EQ_U64(r.status, status);
    CHECK_EQ_U64(r.stats.events, st.events);
    CHECK_EQ_U64(r.stats.bytes, st.bytes);
    CHECK_EQ_U64(r.stats.streams, st.streams);
    CHECK_EQ_U64(r.stats.string_pool_entries, st.string_pool_entries);
    CHECK_EQ_U64(r.stats.unresolved_refs, st.unresolved_refs);
    CHECK_EQ_U64(r.stats.implausible_times, st.implausible_times);
    CHECK_EQ_U64(r.stats.torn_tail, st.torn_tail);
    if (r.stats.events != st.events || r.stats.bytes != st.bytes)
        fprintf(stderr, "  (%s, stopped after %zu events)\n", path, stop_after);
    free(want.keys);
    free(got.keys);
}

/* Ours: a stream's pool entries up front, then long runs of polls, wakes, parks and unparks
 * (a new string now and then ends a run). */
static void write_ours(const char *path) {
    tb t = {0};
    tb_stream_dial9_parks(&t);
    uint32_t loc = tb_string(&t, "src/a.rs:1");
    uint64_t ts = 1000 * MS;
    for (int r = 0; r < 6000; r++, ts += 50 * US) {
        uint64_t w = (uint64_t)(r & 1);
        if (r % 700 == 0) loc = tb_string(&t, r % 1400 ? "src/b.rs:2" : "src/c.rs:3");
        tb_wake(&t, ts, 10 + (uint64_t)r, 11 + (uint64_t)r, (uint8_t)w);
        tb_poll(&t, ts + 100, 2000 + (uint64_t)(r % 3000), w, (uint8_t)(r % 5), 11 + (uint64_t)r, loc);
        if (r % 3 == 0) {
            tb_park(&t, ts + 5000, w, 1000 + (uint64_t)r, 100 + (uint32_t)w);
            tb_unpark(&t, ts + 9000, w, 1200 + (uint64_t)r, 30, 100 + (uint32_t)w);
        }
    }
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(t.b.data, 1, t.b.len, f) == t.b.len);
    if (f) fclose(f);
    d9_buf_free(&t.b);
}

int main(void) {
    char fixture[4096];
    snprintf(fixture, sizeof fixture, "%s/fixtures/dial9-demo-trace.bin", d9t_shared_dir());
    FILE *f = fopen(fixture, "rb");
    if (!f) {
        printf("test_trace_reader_runs: SKIP: %s not found (set D9_SHARED_DIR)\n", fixture);
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *bytes = malloc((size_t)len);
    CHECK(bytes && fread(bytes, 1, (size_t)len, f) == (size_t)len);
    fclose(f);

    /* the fixture cut inside a frame: a torn tail */
    char torn[] = "/tmp/d9-test-trace-reader-runs.XXXXXX";
    int fd = mkstemp(torn);
    CHECK(fd >= 0 && write(fd, bytes, (size_t)len * 2 / 3 + 5) == (ssize_t)((size_t)len * 2 / 3 + 5));
    if (fd >= 0) close(fd);

    char ours[] = "/tmp/d9-test-trace-reader-ours.XXXXXX";
    fd = mkstemp(ours);
    if (fd >= 0) close(fd);
    write_ours(ours);

    const char *inputs[] = {fixture, torn, ours};
    for (size_t i = 0; i < 3; i++) {
        compare(inputs[i], SIZE_MAX);
        /* stops at a run's first, second and last events and at every 997th (runs end where
         * other frames are: any of their positions) */
        static const size_t stops[] = {1, 2, 3, 31, 32, 33, 63, 64, 65, 127, 128, 129};
        for (size_t k = 0; k < sizeof stops / sizeof *stops; k++) compare(inputs[i], stops[k]);
        for (size_t k = 997; k < 140000; k += 997 * 13) compare(inputs[i], k);
    }
    unlink(torn);
    unlink(ours);
    free(bytes);
    printf("test_trace_reader_runs: %d passed, %d failed\n", d9t_passed, d9t_failed);
    return d9t_failed != 0;
}
