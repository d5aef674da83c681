/* The reading half of `analyze` and `check`: the PATH arguments expanded, the trace's span read
 * first when the window counts from its start or end, every event fed to the analysis, the
 * report finished. The two commands differ only in what they print from the report. */
#ifndef D9_CLI_ANALYSIS_RUN_H
#define D9_CLI_ANALYSIS_RUN_H

#include <stdbool.h>

#include "analysis/analysis.h"
#include "cli/trace_reader.h"
#include "format/trace_paths.h"

typedef struct d9_analysis_run {
    d9_path_list paths;
    d9_file_result *results; /* one per path */
    d9a_analysis *analysis;
    const d9a_report *report; /* set when d9_analysis_run_start returned D9_EXIT_OK */
    bool read;                /* the files were read (results hold how each ended) */
    bool readable;            /* every file was read to its end */
    bool note_runs;           /* say when the files lie in several directories (local PATHs) */
} d9_analysis_run;

/* D9_EXIT_OK with run->report set; else the exit code, the reason said on stderr as "dial9 CMD:
 * ..." (D9_EXIT_DATA: no usable PATH, out of memory; D9_EXIT_USAGE: a window holding none of
 * the trace, refused as export refuses it). `opt` must outlive the run. Either way,
 * d9_analysis_run_end afterwards. */
int d9_analysis_run_start(d9_analysis_run *run, const char *cmd, int npaths, char **paths, d9a_options *opt);

/* Say what was wrong with the files on stderr (after the command's report) and free the run. */
void d9_analysis_run_end(d9_analysis_run *run, const char *cmd);

#endif
