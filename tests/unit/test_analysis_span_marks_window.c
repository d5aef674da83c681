/* Span marks kept beside the records (analysis/span_marks.h) are handed to the sweep in step
 * with them, also when the reordering window is flushed half by half: a trace analyzed with a
 * window of 64 records gives the spans section of the default window (2^19, never flushed
 * here), and nothing is late. Two traces of the libuv demo's shape (a span from a connection
 * task's poll to a new write task's poll): one worker, marks in time order as the recorder
 * writes them; and two workers whose rounds are written a slice at a time, worker 1's first
 * (dial9 writes one stream per thread), so the marks arrive out of time order and are sorted.
 * Then a trace with 4 marks a poll analyzed with a 64-record window: its late records and spans
 * are those of its copy without marks (the marks bound the window apart from the records; when
 * they counted with them, 16 records and 8 spans' marks came late). */
#include "check.h"
#include "span_trace.h"

#define ROUNDS 300
#define SLICE 4 /* rounds of a worker written together */

/* Round r of worker w: the span begins in its connection's poll, which spawns the write task;
 * it ends in the write task's poll after its wake. */
static void round_of(tb *t, uint64_t w, int r, const uint32_t locs[2], uint32_t name) {
    uint64_t ts = 1000000000ull + 1000ull * (uint64_t)r + 500ull * w;
    uint64_t conn = 1 + w * 100 + (uint64_t)(r % 16), write = 100000 + w * 10000 + (uint64_t)r;
    uint64_t id = w * 100000 + (uint64_t)r;
    tb_poll_start(t, ts, w, 0, conn, locs[0]);
    tb_span(t, true, ts + 10, w, id, name, conn, 7);
    tb_spawn(t, ts + 20, write, locs[1]);
    tb_poll_end(t, ts + 30, w);
    tb_wake(t, ts + 200, write, write, (uint8_t)w);
    tb_poll_start(t, ts + 220 + (uint64_t)(r * 7919 % 300), w, 0, write, locs[1]);
    tb_span(t, false, ts + 600, w, id, name, write, 7);
    tb_poll_end(t, ts + 620, w);
    tb_terminate(t, ts + 630, write);
}

static void write_trace(tb *t, int workers) {
    tb_stream(t);
    tb_span_schemas(t);
    uint32_t locs[2] = {tb_string(t, "src/server.c:30"), tb_string(t, "src/server.c:33")};
    uint32_t name = tb_string(t, "request");
    for (int s = 0; s < ROUNDS; s += SLICE)
        for (int w = workers - 1; w >= 0; w--)
            for (int r = s; r < s + SLICE && r < ROUNDS; r++) round_of(t, (uint64_t)w, r, locs, name);
}

/* The spans section and the late records of t analyzed with a window of `window` records. */
static bool analyze(tb *t, uint32_t window, d9a_span_report *span, uint64_t *late) {
    d9a_options opt;
    d9a_options_init(&opt);
    if (window) opt.window_records = window;
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, t, &opt);
    bool ok = r && r->nspans == 1;
    if (ok) {
        *span = r->spans[0];
        *late = r->late_records;
    }
    d9a_free(a);
    return ok;
}

static void check_windows(int workers) {
    tb t = {0};
    write_trace(&t, workers);
    d9a_span_report whole, halves;
    uint64_t late_whole = 1, late_halves = 1;
    CHECK(analyze(&t, 0, &whole, &late_whole));
    CHECK(analyze(&t, 256, &halves, &late_halves));
    CHECK_EQ_U64(late_whole, 0);
    CHECK_EQ_U64(late_halves, 0);
    CHECK_EQ_U64(whole.count, (uint64_t)(ROUNDS * workers));
    CHECK_EQ_U64(halves.count, whole.count);
    CHECK_EQ_U64(halves.unended, 0);
    CHECK_EQ_U64(halves.elapsed.total, whole.elapsed.total);
    CHECK_EQ_U64(halves.poll_ns, whole.poll_ns);
    CHECK_EQ_U64(halves.queued_ns, whole.queued_ns);
    CHECK_EQ_U64(halves.wait_ns, whole.wait_ns);
    CHECK_EQ_U64(halves.unknown_ns, whole.unknown_ns);
    /* a span is 590 ns: its two polls' parts 20 + 20, queued 20 + the write's start, the rest waiting */
    CHECK_EQ_U64(whole.elapsed.total, 590ull * ROUNDS * (uint64_t)workers);
    CHECK(whole.poll_ns > 0 && whole.queued_ns > 0 && whole.wait_ns > 0);
    d9_buf_free(&t.b);
}

/* Two workers' polls written 8 rounds a slice, worker 1's (the later ones) first, and after each
 * poll 2 spans begun and ended outside it (4 marks a poll): out of time order by 16 records and
 * 32 marks. A 64-record window holds that disorder in records; were the marks counted in it
 * (as before spancost), the window would be flushed inside worker 1's slice and worker 0's older
 * polls would come late. Marks bound themselves (d9a_marks_full): the trace's late records are
 * those of its copy without marks, none. */
static void write_marks_heavy(tb *t, bool marks) {
    tb_stream(t);
    tb_span_schemas(t);
    uint32_t loc = tb_string(t, "src/server.c:30"), name = tb_string(t, "cache");
    for (int s = 0; s < 64; s += 8)
        for (int w = 1; w >= 0; w--)
            for (int r = s; r < s + 8; r++) {
                uint64_t ts = 1000000000ull + 10000ull * (uint64_t)r + 5000ull * (uint64_t)w;
                uint64_t task = 1 + 100 * (uint64_t)w + (uint64_t)(r % 4);
                tb_wake(t, ts, task, task, (uint8_t)w);
                tb_poll_start(t, ts + 100, (uint64_t)w, 0, task, loc);
                tb_poll_end(t, ts + 200, (uint64_t)w);
                for (int k = 0; k < 2 && marks; k++) {
                    uint64_t id = (uint64_t)w << 32 | (uint64_t)(r * 2 + k);
                    tb_span(t, true, ts + 300 + 100 * (uint64_t)k, (uint64_t)w, id, name, 0, 7);
                    tb_span(t, false, ts + 350 + 100 * (uint64_t)k, (uint64_t)w, id, name, 0, 7);
                }
            }
}

static void check_marks_do_not_shorten_the_window(void) {
    uint64_t late[2] = {1, 1};
    for (int marks = 0; marks < 2; marks++) {
        tb t = {0};
        write_marks_heavy(&t, marks);
        d9a_options opt;
        d9a_options_init(&opt);
        opt.window_records = 64;
        d9a_analysis *a;
        const d9a_report *r = tb_analyze(&a, &t, &opt);
        CHECK(r != NULL);
        if (r) {
            late[marks] = r->late_records;
            CHECK_EQ_U64(r->nspans, (uint64_t)marks);
            if (marks && r->nspans == 1) CHECK_EQ_U64(r->spans[0].count, 2 * 64 * 2);
        }
        d9a_free(a);
        d9_buf_free(&t.b);
    }
    CHECK_EQ_U64(late[0], 0);
    CHECK_EQ_U64(late[1], late[0]);
}

int main(void) {
    check_windows(1);
    check_windows(2);
    check_marks_do_not_shorten_the_window();
    return d9t_summary("analysis_span_marks_window");
}
