/* What spans add to `dial9 analyze`, counted: callgrind's instructions of the whole command on
 * a generated trace with span marks, against the same trace without them, per span, against a
 * bound written here. Counts do not move with the machine's load, so a regression of the span
 * path (the marks' decoding and ingest, their records' sort, the span model, its sums by name)
 * fails anywhere.
 *
 * The trace is the worst case of bench/analyze_spans (docs/analyze.md, "Performance"): one
 * worker, 64 tasks in turn, per round a span begun outside any poll, a poll in which the task
 * is woken, a second poll in which the span ends: every poll inside a span, a span every 7
 * events. Two sizes of each (R1 and R2 rounds): the difference of the four counts over R2 - R1
 * is one span's cost, what is paid once per run (startup, the report) cancels.
 *
 * A second trace has the libuv demo's shape (examples/uv-server): a request's span begins in a
 * poll of its connection's task (16 of them, in turn), which spawns a write request's task;
 * the span ends in that task's only poll, after its wake, and the task terminates: every span
 * over two tasks, one of them new, as the model's task table pays most. A third is that shape
 * under the cost governor's `paused` mode from its start (a CoverageEvent), as the recorded
 * libuv demo trace is nearly throughout: every poll is a gap of the switch records, all of it
 * unknown, which the span model then splits by cause. Two more are the libuv demo's shape since
 * a quick write is a poll of its connection's task (one task a span, 16 requests in flight),
 * plain and governed; the plain one again with a window that is flushed (as a long recording's
 * is). D9T_KEEP=1 keeps the last shape's traces and profiles; D9T_SHAPE=N measures
 * shape N only.
 *
 * Skips without valgrind, without the dial9 binary, and in a sanitizer build (valgrind refuses
 * its instrumentation, which is not the cost measured). Labelled nosan in CMakeLists.txt. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attribution_trace.h" /* tb_coverage */
#include "callgrind_total.h"
#include "span_trace.h"

/* Measured (gcc 12, -O2, this 2-vCPU kvm guest) on this trace: 2 649.4 instructions per span
 * before the sweep fed the span model where it handles each kind (a call for every record) and
 * kept the newest open span out of the id index; 2 450.4 after them and a span reported from
 * its slot. Of those 2 450: decoding the two marks ~670, their ingest ~320 and their records'
 * sort ~210 (what any reader of the marks pays), the span model ~1 030, the rest (their
 * records' dispatch, the elapsed histogram) ~110 (docs/analyze.md, "Performance"). Then the
 * decoder's field plans, bounded events read straight through (format/decoder.c,
 * read_bounded): 2 484.4 -> 2 263.4 (the same build with the decoder before, then after).
 * Then a span's split from its first record on (a binary search, not every record since the
 * oldest open span began), the sweep's calls into the model inline, no call for a poll without
 * gaps, a span's tasks looked up once: 2 263.4 -> 2 177.4. Then analyze's model keeps no in-poll
 * intervals (d9m_spans_no_intervals: on_span reads only the parts): 2 177.4 -> 2 156.4. Then
 * analyze's sums by name add a span whose in-poll part is all on CPU as one part, not the whole
 * split (span_stats.c): 2 156.4 -> 2 101.4. ~0.6 % of room (the count is the same run to run):
 * it fails on the build before (2 156.4: D9_DIAL9=that build's dial9). Then the decoder's runs
 * (d9_dec_next hands out events it read ahead; 2 101.4 -> 1 935.8) and the CLI's reader taking
 * them (cli/trace_reader.c, d9_dec_next_run): 1 935.8 -> 1 895.8, ~1 % of room (main's 1 935.8
 * fails it). Then the span marks kept beside the records in time order, merged into the sweep
 * in step, not sorted with them (analysis/span_marks.h), their pooled names cached by pool id:
 * 1 890.7 -> 1 675.7, ~1 % of room (main's 1 890.7 fails it). Then the model's begin, end and their
 * index and queue inline (their slow paths out of line), a poll whose task has room with no call
 * but its gaps' (spancost): 1 661.0 -> 1 568.4; then a one-task span reported inline in the end's
 * call: 1 544.4, ~1.7 % of room (main's 1 661.0 fails it). */
#define BOUND_PER_SPAN 1570.0
/* The libuv shape: 2 787.1 a span with the span model's own task table by id, 2 430.2 with the
 * states held by the sweep's tasks (d9m_spans_task_*, span_sweep.h) and the sweep's task found
 * last checked first; ~1 % of room: it fails on the build before (D9_DIAL9=that build's
 * dial9). The one-task shape does not move (2 085.4 -> 2 087.7): its single task was the
 * model's last hit already. Then a span split in one walk over its tasks' records in place
 * (no copy, sort or union; a poll all unknown a flag on its record): 2 430.2 -> 2 399.2, ~1 %
 * of room (main's 2 430.2 fails it); the one-task shape 2 087.7 -> 2 087.7. Then the
 * decoder's runs (2 399.2 -> 2 249.6) and the reader taking them: 2 249.6 -> 2 209.6, ~1 % of
 * room (main's 2 249.6 fails it). Then the marks beside the records (see above): 2 205.5 ->
 * 2 112.1, ~1 % of room (main's 2 205.5 fails it). Then (see above) 2 092.4 -> 2 005.6, and
 * 2 016.6 with the one-task report's check in front of report(), ~0.9 % of room (main's 2 092.4
 * fails it). */
#define BOUND_PER_SPAN_TWO_TASKS 2035.0
/* The libuv shape governed (every poll a gap): 3 210.3 a span before the walk, 2 536.3 with
 * it (the gaps were one entry each among the task's gaps and off-CPU intervals, and a span's
 * split by cause read them back; now a flag on the poll's record); ~1 % of room: main's
 * 3 210.3 fails it. Then the decoder's runs (2 536.3 -> 2 386.6) and the reader taking them:
 * 2 386.6 -> 2 346.6, ~1 % of room (main's 2 386.6 fails it). Then the marks beside the
 * records: 2 342.5 -> 2 247.1, ~1 % of room (main's 2 342.5 fails it). Then a poll and its
 * gaps in one call into the model, a governed poll flagged as its record is made, and a span
 * all unknown in polls summed as one part (d9m_spans_task_poll_attr, span_stats.c): 2 247.1 ->
 * 2 117.5, ~1.3 % of room (main's 2 247.1 fails it). Then (see above) 2 104.4 -> 2 023.4 -> 2 035.4,
 * ~1 % of room (main's 2 104.4 fails it). */
#define BOUND_PER_SPAN_GOVERNED 2055.0
/* The libuv shape since a quick write is a poll of its connection (one task, the span begun in
 * its poll), 16 requests in flight, plain and governed: 2 261.9 and 2 350.8 a span with the open
 * spans' id index in a map; 1 985.7 and 2 072.7 with it direct-mapped (the newest still out of
 * it), a task's records dropped when its array is full, not at every poll, and a span's first
 * record found from the newest back; ~1.5 % of room: main's counts fail them. The three shapes
 * above moved -4.1 to -5.1 (1 890.7, 2 205.5, 2 342.5): no span overlaps another there. Then
 * the marks beside the records: 1 985.7 -> 1 624.7 and 2 072.7 -> 1 710.7 (a mark inside a
 * poll is newer than the poll's record, which arrives at the poll's end: the records' sort
 * paid for every mark), ~1 % of room (main's counts fail them). Then the poll and its gaps in
 * one call (see the governed shape above): governed 1 710.7 -> 1 629.1, bound 1 650 (main's
 * 1 710.7 fails it); plain 1 624.7 -> 1 625.1 (no gaps: one call either way), bound kept.
 * Then (see the first shape) plain 1 616.7 -> 1 532.8 -> 1 503.8, governed 1 614.1 -> 1 533.0 ->
 * 1 502.0, ~1.6 % of room (main's counts fail them). */
#define BOUND_PER_SPAN_CONN 1528.0
#define BOUND_PER_SPAN_CONN_GOVERNED 1528.0

/* The connection shape analyzed with a window of 16 Ki records (`--window`), as a long recording
 * is with the default one: R2's trace (48 Ki records, 48 Ki marks) is handed on half a window at a
 * time, each flush compacting and merging what stays. 1 714.3 a span while the marks counted in
 * the records' window (a trace with spans flushed more often than without them), 1 579.2 with
 * each bounding itself (analysis/internal.h, d9a_marks_full), 1 550.2 with the one-task report
 * inline; ~1.6 % of room (main's 1 714.3 fails it). */
#define WINDOW_FLUSHED 16384
#define BOUND_PER_SPAN_CONN_FLUSHED 1575.0

/* Two workers' marks interleaved out of time order (conn_rounds_two_workers): 2 127.4 a span on
 * main, 2 042.9 with the model's changes above, 1 782.9 with the marks sorted by merging the
 * runs they came in, not by a merge sort from single marks (analysis/span_marks.c), 1 753.9 with
 * the one-task report inline; ~1.5 % of room (main's 2 127.4 and the build before the sort's
 * 2 042.9 fail it). */
#define BOUND_PER_SPAN_TWO_WORKERS 1780.0

#define R1 4000
#define R2 24000

/* The libuv demo's shape, `rounds` requests (see above). */
static void two_task_rounds(tb *t, uint64_t ts, int rounds, bool spans, const uint32_t locs[2], uint32_t name) {
    for (int r = 0; r < rounds; r++) {
        uint64_t conn = 1 + (uint64_t)(r % 16), write = 1000 + (uint64_t)r;
        ts += 1000;
        tb_poll_start(t, ts, 0, 0, conn, locs[0]);
        if (spans) tb_span(t, true, ts + 10, 0, (uint64_t)r, name, conn, 7);
        tb_spawn(t, ts + 20, write, locs[1]);
        tb_poll_end(t, ts + 30, 0);
        tb_wake(t, ts + 200, write, write, 0);
        tb_poll_start(t, ts + 220 + (uint64_t)(r * 7919 % 300), 0, 0, write, locs[1]);
        if (spans) tb_span(t, false, ts + 600, 0, (uint64_t)r, name, write, 7);
        tb_poll_end(t, ts + 620, 0);
        tb_terminate(t, ts + 630, write);
    }
}

/* The libuv demo's shape since a write completed before the loop parks is a poll of the task
 * that submitted it (docs/adapters.md), with its 16 connections in flight at once: a round is a
 * wake and a poll of one connection's task (16 of them, in turn), in which the request it began
 * 16 rounds before ends and its next one begins. One task a span, begun in a poll; 16 spans
 * open at any time (the id index and the records kept for the oldest open span at work). */
static void conn_rounds(tb *t, uint64_t ts, int rounds, bool spans, const uint32_t locs[2], uint32_t name) {
    for (int r = 0; r < rounds + 16; r++) {
        uint64_t conn = 1 + (uint64_t)(r % 16), at = ts + 1000 * (uint64_t)(r + 1) + (uint64_t)(r * 7919 % 300);
        tb_wake(t, at, conn, conn, 0);
        tb_poll_start(t, at + 20, 0, 0, conn, locs[0]);
        if (spans && r >= 16) tb_span(t, false, at + 25, 0, (uint64_t)(r - 16), name, conn, 7);
        if (spans && r < rounds) tb_span(t, true, at + 30, 0, (uint64_t)r, name, conn, 7);
        tb_poll_end(t, at + 60, 0);
    }
}

/* The same on two workers (each its own 16 connections, half the rounds), written a slice of 64
 * rounds at a time, worker 1's first, as two threads' buffers are drained: each worker's marks
 * in time order, the two interleaved out of it, so analyze sorts the marks at each flush. */
static void conn_rounds_two_workers(tb *t, uint64_t ts, int rounds, bool spans, const uint32_t locs[2], uint32_t name) {
    int per = rounds / 2;
    for (int s = 0; s < per + 16; s += 64)
        for (int w = 1; w >= 0; w--)
            for (int r = s; r < s + 64 && r < per + 16; r++) {
                uint64_t conn = 1 + 100 * (uint64_t)w + (uint64_t)(r % 16), base = 1000000 * (uint64_t)w;
                uint64_t at = ts + 2000 * (uint64_t)(r + 1) + 1000 * (uint64_t)w + (uint64_t)(r * 7919 % 300);
                tb_wake(t, at, conn, conn, (uint8_t)w);
                tb_poll_start(t, at + 20, (uint64_t)w, 0, conn, locs[0]);
                if (spans && r >= 16) tb_span(t, false, at + 25, (uint64_t)w, base + (uint64_t)(r - 16), name, conn, 7);
                if (spans && r < per) tb_span(t, true, at + 30, (uint64_t)w, base + (uint64_t)r, name, conn, 7);
                tb_poll_end(t, at + 60, (uint64_t)w);
            }
}

typedef enum shape_kind { ONE_TASK, TWO_TASKS, CONN, CONN_TWO_WORKERS } shape_kind;

/* A trace of `rounds` rounds into path, with or without the span marks, of the shape `kind`
 * (one task begun outside a poll, the libuv demo's two tasks or its one connection task);
 * governed: the switch records paused by the cost governor throughout. */
static int write_trace(const char *path, int rounds, bool spans, shape_kind kind, bool governed) {
    tb t = {0};
    tb_stream(&t);
    tb_span_schemas(&t);
    uint64_t ts = 1000000000000ull;
    /* switch records active, as the recorder's default: the polls are covered, not gaps */
    const char *meta[] = {"service", "spanbench", "host", "gen", "source.off_cpu", "active: perf switch records", NULL};
    tb_metadata(&t, ts, meta);
    if (governed) tb_coverage(&t, ts, "paused");
    uint32_t locs[2] = {tb_string(&t, "src/server.c:30"), tb_string(&t, "src/server.c:33")};
    uint32_t name = tb_string(&t, "request");
    if (kind == TWO_TASKS) two_task_rounds(&t, ts, rounds, spans, locs, name);
    if (kind == CONN) conn_rounds(&t, ts, rounds, spans, locs, name);
    if (kind == CONN_TWO_WORKERS) conn_rounds_two_workers(&t, ts, rounds, spans, locs, name);
    for (int r = 0; r < rounds && kind == ONE_TASK; r++) {
        uint64_t task = 1 + (uint64_t)(r % 64);
        ts += 1000;
        if (spans) tb_span(&t, true, ts, 0, (uint64_t)r, name, 0, 7);
        tb_poll_start(&t, ts + 20, 0, 0, task, locs[0]);
        tb_wake(&t, ts + 40, task, task, 0);
        tb_poll_end(&t, ts + 60, 0);
        tb_poll_start(&t, ts + 80 + (uint64_t)(r * 7919 % 300), 0, 0, task, locs[1]);
        if (spans) tb_span(&t, false, ts + 400, 0, (uint64_t)r, name, task, 7);
        tb_poll_end(&t, ts + 420, 0);
    }
    return tb_write_file(&t, path);
}

/* callgrind's total for `dial9 analyze trace` (with --window when window > 0); -1 on failure */
static long long count(const char *dial9, const char *dir, const char *trace, const char *tag, unsigned window) {
    char out[1200], command[6144], opt[64] = "";
    snprintf(out, sizeof out, "%s/cg.%s", dir, tag);
    if (window) snprintf(opt, sizeof opt, "--window %u ", window);
    if (snprintf(command, sizeof command, "'%s' analyze %s'%s'", dial9, opt, trace) >=
        (int)sizeof command)
        return -1;
    return d9t_callgrind_total(out, "", command);
}

/* One shape's cost per span against its bound; 0 when within it. */
static int measure(const char *dial9, const char *dir, shape_kind kind, bool governed, unsigned window, double bound,
                   const char *what) {
    static const struct { int rounds; bool spans; const char *tag; } k[4] = {
        {R1, true, "s1"}, {R2, true, "s2"}, {R1, false, "n1"}, {R2, false, "n2"}};
    long long c[4];
    for (int i = 0; i < 4; i++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/%s.bin", dir, k[i].tag);
        if (write_trace(path, k[i].rounds, k[i].spans, kind, governed) != 0) {
            fprintf(stderr, "FAIL: writing %s\n", path);
            return 1;
        }
        c[i] = count(dial9, dir, path, k[i].tag, window);
        if (c[i] <= 0) return 1;
    }
    if (c[1] <= c[0] || c[3] <= c[2] || c[1] <= c[3]) {
        fprintf(stderr, "FAIL: counts out of order: %lld %lld %lld %lld\n", c[0], c[1], c[2], c[3]);
        return 1;
    }
    double per_span = (double)((c[1] - c[0]) - (c[3] - c[2])) / (double)(R2 - R1);
    double pct = 100.0 * (double)(c[1] - c[3]) / (double)c[3];
    printf("%s dial9 analyze, %s: %.1f instructions per span (bound %.0f); %d spans: %lld with the marks, "
           "%lld without (%+.1f %%)\n",
           per_span <= bound ? "ok   " : "FAIL ", what, per_span, bound, R2, c[1], c[3], pct);
    if (per_span <= bound) return 0;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "callgrind_annotate --inclusive=no '%s/cg.s2' 2>/dev/null | sed -n '/file:function/,$p' | head -20", dir);
    (void)d9t_run(cmd);
    return 1;
}

int main(void) {
#ifdef D9T_SANITIZED
    printf("SKIP: a sanitizer build (valgrind refuses it; the count is of the plain build)\n");
    return 0;
#endif
    const char *build = getenv("D9_BUILD_DIR");
    char dial9[2048];
    snprintf(dial9, sizeof dial9, "%s/dial9", build ? build : ".");
    if (getenv("D9_DIAL9")) snprintf(dial9, sizeof dial9, "%s", getenv("D9_DIAL9")); /* another build's */
    if (access(dial9, X_OK) != 0) {
        printf("SKIP: %s is not built\n", dial9);
        return 0;
    }
    if (d9t_run("command -v valgrind >/dev/null 2>&1") != 0) {
        printf("SKIP: valgrind is not installed (apt-get install valgrind)\n");
        return 0;
    }
    char dir[900];
    snprintf(dir, sizeof dir, "%s/span-instructions.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", dir, strerror(errno));
        return 1;
    }
    static const struct { shape_kind kind; bool governed; unsigned window; double bound; const char *what; } shape[] = {
        {ONE_TASK, false, 0, BOUND_PER_SPAN, "one task"},
        {TWO_TASKS, false, 0, BOUND_PER_SPAN_TWO_TASKS, "two tasks (libuv)"},
        {TWO_TASKS, true, 0, BOUND_PER_SPAN_GOVERNED, "two tasks (libuv), governed"},
        {CONN, false, 0, BOUND_PER_SPAN_CONN, "one connection task, 16 in flight (libuv now)"},
        {CONN, true, 0, BOUND_PER_SPAN_CONN_GOVERNED, "one connection task, 16 in flight (libuv now), governed"},
        {CONN, false, WINDOW_FLUSHED, BOUND_PER_SPAN_CONN_FLUSHED,
         "one connection task, 16 in flight (libuv now), window flushed"},
        {CONN_TWO_WORKERS, false, 0, BOUND_PER_SPAN_TWO_WORKERS,
         "one connection task, 16 in flight on each of two workers, marks out of order"}};
    int failed = 0;
    const char *only = getenv("D9T_SHAPE"); /* one shape, by its index above (to profile it) */
    for (size_t sh = 0; sh < sizeof shape / sizeof shape[0]; sh++) /* all measured, whatever the first give */
        if (!only || (size_t)atoi(only) == sh)
            failed |= measure(dial9, dir, shape[sh].kind, shape[sh].governed, shape[sh].window, shape[sh].bound,
                              shape[sh].what);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!getenv("D9T_KEEP")) (void)d9t_run(cmd); /* D9T_KEEP: the traces and profiles kept, to compare */
    else printf("kept %s\n", dir);
    if (!failed) printf("PASS\n");
    return failed;
}
