/* Reading a trace into the analysis, for analyze and check (analysis_run.h). */
#include "cli/analysis_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/time_options.h"

int d9_analysis_run_start(d9_analysis_run *run, const char *cmd, int npaths, char **paths, d9a_options *opt) {
    *run = (d9_analysis_run){0};
    /* an s3:// selection of several instances is merged on purpose, as are diff's sides */
    run->note_runs = strcmp(cmd, "diff") != 0;
    for (int i = 0; i < npaths; i++)
        if (!strncmp(paths[i], "s3://", 5)) run->note_runs = false;
    char err[512];
    if (d9_expand_paths(npaths, paths, &run->paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 %s: %s\n", cmd, err);
        return D9_EXIT_DATA;
    }
    if (d9_cli_window_is_relative(&opt->from, &opt->to)) {
        d9_cli_trace_span(&run->paths, &opt->trace_start_ts, &opt->trace_end_ts);
        opt->trace_span_known = true;
    }
    run->results = calloc(run->paths.count ? run->paths.count : 1, sizeof *run->results);
    run->analysis = d9a_new(opt);
    if (!run->results || !run->analysis) {
        fprintf(stderr, "dial9 %s: out of memory\n", cmd);
        return D9_EXIT_DATA;
    }
    d9a_feeder feeder = {.a = run->analysis};
    run->readable = d9_read_trace_files(&run->paths, d9a_feeder_event, &feeder, run->results) == D9_EXIT_OK;
    run->read = true;
    const d9a_report *r = d9a_finish(run->analysis);
    if (!r) {
        fprintf(stderr, "dial9 %s: out of memory\n", cmd);
        return D9_EXIT_DATA;
    }
    if (r->window_error) {
        fprintf(stderr, "dial9 %s: %s\n", cmd, r->window_error);
        return D9_EXIT_USAGE;
    }
    run->report = r;
    return D9_EXIT_OK;
}

/* Trace files of more than one directory are (most often) more than one run, which the
 * analysis merges: their workers, tasks and times mix. A PATH such as /tmp/dial9-traces (every
 * run kept there) does that silently, so it is said, naming the last (newest) directory. */
static void note_several_runs(const char *cmd, const d9_path_list *paths) {
    size_t dirs = 0, last_len = 0;
    const char *last = NULL;
    for (size_t i = 0; i < paths->count; i++) {
        const char *p = paths->paths[i], *slash = strrchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : 0;
        if (!last || len != last_len || strncmp(p, last, len)) dirs++, last = p, last_len = len;
    }
    if (dirs > 1)
        fprintf(stderr, "dial9 %s: note: the trace files are in %zu directories (runs), analyzed as one: "
                        "their workers, tasks and times are merged; for one run give its directory (the last: %.*s)\n",
                cmd, dirs, (int)last_len, last);
}

void d9_analysis_run_end(d9_analysis_run *run, const char *cmd) {
    d9_report_skipped_dirs(stderr, cmd, &run->paths);
    if (run->read && run->note_runs) note_several_runs(cmd, &run->paths);
    if (run->read) d9_report_file_problems(stderr, cmd, run->results, run->paths.count, true);
    d9a_free(run->analysis);
    free(run->results);
    d9_path_list_free(&run->paths);
    *run = (d9_analysis_run){0};
}
