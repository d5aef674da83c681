/* --from/--to (see time_options.h). */
#include "cli/time_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/trace_reader.h"
#include "fleet/wall_time.h"

int d9_cli_parse_time_option(const char *cmd, const char *opt, const char *value, d9_time_arg *out) {
    char err[400];
    if (d9_time_arg_parse(value, out, err, sizeof err) == 0) return 0;
    time_t wall;
    if (d9_wall_time_parse(value, time(NULL), &wall) == 0) { /* fleet/wall_time.h: one grammar */
        fprintf(stderr,
                "dial9 %s: %s %s: a wall-clock time chooses the segments of s3://BUCKET/PREFIX inputs "
                "by their keys; a local trace is windowed by trace time: %s\n",
                cmd, opt, value, D9_TIME_ARG_FORMS);
        return -1;
    }
    fprintf(stderr, "dial9 %s: %s %s\n", cmd, opt, err);
    return -1;
}

int d9_cli_check_window(const char *cmd, const d9_time_arg *from, const d9_time_arg *to) {
    if (!d9_time_window_empty(from, to)) return 0;
    fprintf(stderr, "dial9 %s: --to must be after --from\n", cmd);
    return -1;
}

typedef struct span {
    bool any;
    uint64_t first, last;
} span;

static int note_span(void *ctx, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    (void)dec;
    (void)file_index;
    span *s = ctx;
    /* the readers' rule: timestamp 0 (SymbolTableEntry) is no point in time */
    if (!ev->schema->has_timestamp || ev->ts_ns == 0) return 0;
    if (!s->any || ev->ts_ns < s->first) s->first = ev->ts_ns;
    if (!s->any || ev->ts_ns > s->last) s->last = ev->ts_ns;
    s->any = true;
    return 0;
}

void d9_cli_trace_span(const d9_path_list *paths, uint64_t *first_ts, uint64_t *last_ts) {
    span s = {0};
    d9_file_result *results = calloc(paths->count ? paths->count : 1, sizeof *results);
    if (results) (void)d9_read_trace_files(paths, note_span, &s, results);
    free(results);
    *first_ts = s.first;
    *last_ts = s.last;
}

bool d9_cli_window_is_relative(const d9_time_arg *from, const d9_time_arg *to) {
    return (from->set && from->base != D9_TIME_ABSOLUTE) || (to->set && to->base != D9_TIME_ABSOLUTE);
}
