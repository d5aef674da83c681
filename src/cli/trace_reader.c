/* Reading a list of trace files (see trace_reader.h). */
#include "cli/trace_reader.h"

#include <inttypes.h>
#include <string.h>

#include "cli/cli.h"

bool d9_file_failed(const d9_file_result *r) {
    return !r->opened || r->status == D9_DEC_ERROR || r->status == D9_DEC_DAMAGED ||
           r->stats.undefined_pool_ids > 0;
}

/* A file with no byte at all is no trace (a crash before the header, a wrong file), but the
 * segment the recorder has just opened may not have its header yet: an empty `.active` file
 * reads as a trace of nothing. */
static bool empty_trace(const d9_file_result *r) {
    size_t n = strlen(r->path);
    bool active = n >= 7 && !strcmp(r->path + n - 7, ".active");
    return r->status == D9_DEC_END && r->stats.input_bytes == 0 && !active;
}

/* Events a run at a time where the decoder reads them so (d9_dec_next_run: the bounded events
 * buffered, in one call), by d9_dec_next elsewhere: it refills the buffer, reads every other
 * frame and names damage and errors. After a run's 0, one d9_dec_next reads the event that
 * stopped it (it reads none ahead then), and the next run starts after it: the libuv demo's
 * trace, 61 events a run, misses 3 % of its attempts. An attempt costs about what reading an
 * event does, and where runs stay short (dial9's demo fixture: 30 % of its events of schemas
 * with no bounded plan, a pool or reset frame every 12 events; 78 % of attempts miss) POOR_RUNS attempts in a row of under RUN_WORTH events leave
 * the next OFF_RUNS events to d9_dec_next alone (which reads bounded events ahead itself).
 * Only a long stretch: after two d9_dec_next in a row a run may return 0 only because the
 * decoder read ahead, so misses no longer say that runs are short. The run sizes are dial9
 * fold's. */
enum { RUN_EVENTS = 64, RUN_VALUES = RUN_EVENTS * 12, RUN_WORTH = 4, POOR_RUNS = 8, OFF_RUNS = 4096 };

/* The file's counts when fn stopped the reading at run[i] of n: the decoder counted the whole
 * run as read; count only the events handed out, as d9_dec_next does. */
static void stats_at_stop(d9_decoder *d, const d9_event *run, int i, int n, d9_dec_stats *stats) {
    *stats = *d9_dec_get_stats(d);
    if (i + 1 < n) {
        stats->events -= (uint64_t)(n - 1 - i);
        stats->bytes = run[i + 1].offset;
    }
}

static int ignore_event(void *ctx, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    (void)ctx, (void)ev, (void)dec, (void)file_index;
    return 0;
}

/* Every event of `d` to fn (may be NULL); true when fn asked to stop. */
static bool read_events(d9_decoder *d, d9_event_fn fn, void *ctx, size_t file_index,
                        d9_dec_stats *stats) {
    d9_event run[RUN_EVENTS];
    d9_value vals[RUN_VALUES];
    if (!fn) fn = ignore_event;
    int poor = 0; /* attempts in a row that gave fewer than RUN_WORTH events */
    for (;;) {
        int n = d9_dec_next_run(d, run, RUN_EVENTS, vals, RUN_VALUES);
        for (int i = 0; i < n; i++) {
            if (fn(ctx, &run[i], d, file_index) != 0) {
                stats_at_stop(d, run, i, n, stats);
                return true;
            }
        }
        poor = n < RUN_WORTH ? poor + 1 : 0;
        if (n > 0 && poor < POOR_RUNS) continue;
        int singles = poor < POOR_RUNS ? 1 : OFF_RUNS;
        if (poor >= POOR_RUNS) poor = 0;
        for (; singles > 0; singles--) {
            if (d9_dec_next(d, &run[0]) <= 0) {
                *stats = *d9_dec_get_stats(d);
                return false;
            }
            if (fn(ctx, &run[0], d, file_index) != 0) {
                stats_at_stop(d, run, 0, 1, stats);
                return true;
            }
        }
    }
}

int d9_read_trace_files(const d9_path_list *paths, d9_event_fn fn, void *ctx,
                        d9_file_result *results) {
    int rc = paths->skipped_count ? D9_EXIT_DATA : D9_EXIT_OK;
    bool stopped = false;
    for (size_t i = 0; i < paths->count; i++) {
        d9_file_result *r = &results[i];
        memset(r, 0, sizeof *r);
        r->path = paths->paths[i];
        if (stopped) continue;
        d9_decoder *d = d9_dec_open_path(r->path, NULL, r->message, sizeof r->message);
        if (!d) {
            r->status = D9_DEC_ERROR;
            rc = D9_EXIT_DATA;
            continue;
        }
        r->opened = true;
        stopped = read_events(d, fn, ctx, i, &r->stats);
        r->status = d9_dec_state(d);
        if (r->status == D9_DEC_RUNNING) r->status = D9_DEC_END; /* stopped early by the caller */
        snprintf(r->message, sizeof r->message, "%s", d9_dec_message(d));
        if (empty_trace(r)) {
            r->status = D9_DEC_ERROR;
            snprintf(r->message, sizeof r->message, "empty file: not a dial9 trace (no stream header)");
        }
        if (r->stats.undefined_pool_ids > 0) {
            size_t n = strlen(r->message);
            snprintf(r->message + n, sizeof r->message - n,
                     "%s%" PRIu64 " pool id(s) referenced but never defined in their stream",
                     n ? "; " : "", r->stats.undefined_pool_ids);
        }
        if (r->stats.implausible_times > 0) {
            /* a warning: the events are there, their times are not to be believed */
            size_t n = strlen(r->message);
            snprintf(r->message + n, sizeof r->message - n,
                     "%swarning: %" PRIu64 " implausible timestamp(s), more than %llu h outside the"
                     " file's clock sync range [%" PRIu64 ", %" PRIu64 "] ns (first: %" PRIu64
                     " ns at offset %" PRIu64 ")",
                     n ? "; " : "", r->stats.implausible_times,
                     (unsigned long long)(D9_DEC_TIME_SLACK_NS / 3600000000000ull),
                     r->stats.clock_sync_first_ns, r->stats.clock_sync_last_ns,
                     r->stats.first_implausible_ts, r->stats.first_implausible_offset);
        }
        if (d9_file_failed(r)) rc = D9_EXIT_DATA;
        d9_dec_close(d);
    }
    return rc;
}

const char *d9_file_status_name(const d9_file_result *r) {
    if (r->opened && r->status == D9_DEC_DAMAGED) return "damaged";
    if (d9_file_failed(r)) return "error";
    return r->status == D9_DEC_TRUNCATED ? "truncated" : "ok";
}

void d9_report_file_problems(FILE *out, const char *cmd, const d9_file_result *results, size_t n,
                             bool errors_only) {
    for (size_t i = 0; i < n; i++) {
        const d9_file_result *r = &results[i];
        if (!r->message[0] || (errors_only && !d9_file_failed(r))) continue;
        if (!r->opened) fprintf(out, "dial9 %s: %s\n", cmd, r->message); /* names the path */
        else fprintf(out, "dial9 %s: %s: %s\n", cmd, r->path, r->message);
    }
}

void d9_report_skipped_dirs(FILE *out, const char *cmd, const d9_path_list *paths) {
    for (size_t i = 0; i < paths->skipped_count; i++)
        fprintf(out, "dial9 %s: %s (skipped: its trace files were not read)\n", cmd, paths->skipped[i]);
}
