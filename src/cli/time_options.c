/* --from/--to (see time_options.h). */
#include "cli/time_options.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli/trace_reader.h"

int d9_cli_parse_time_option(const char *cmd, const char *opt, const char *value, d9_time_arg *out) {
    char err[400];
    if (d9_time_arg_parse(value, out, err, sizeof err) == 0) return 0;
    fprintf(stderr, "dial9 %s: %s %s\n", cmd, opt, err);
    return -1;
}

int d9_cli_check_window(const char *cmd, const d9_time_arg *from, const d9_time_arg *to) {
    if (!d9_time_window_empty(from, to)) return 0;
    fprintf(stderr, "dial9 %s: --to must be after --from\n", cmd);
    return -1;
}

static int note_last(void *ctx, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    (void)dec;
    (void)file_index;
    uint64_t *last = ctx;
    /* the readers' rule: timestamp 0 (SymbolTableEntry) is no point in time */
    if (ev->schema->has_timestamp && ev->ts_ns != 0 && ev->ts_ns > *last) *last = ev->ts_ns;
    return 0;
}

uint64_t d9_cli_trace_end_ts(const d9_path_list *paths) {
    uint64_t last = 0;
    d9_file_result *results = calloc(paths->count ? paths->count : 1, sizeof *results);
    if (!results) return 0;
    (void)d9_read_trace_files(paths, note_last, &last, results);
    free(results);
    return last;
}
