/* --from/--to for every command that takes a time window (analyze, check, export), so they
 * accept the same words (common/time_arg.h) and say the same things about them. */
#ifndef D9_CLI_TIME_OPTIONS_H
#define D9_CLI_TIME_OPTIONS_H

#include <stdint.h>

#include "format/trace_paths.h"
#include "common/time_arg.h"

/* Parse the value of --from or --to (`opt`, for the message) into *out; 0, or -1 after
 * printing "dial9 CMD: --from "5": a time needs a unit: use ..." on stderr. */
int d9_cli_parse_time_option(const char *cmd, const char *opt, const char *value, d9_time_arg *out);

/* 0 when the window can hold something; -1 after printing "--to must be after --from". */
int d9_cli_check_window(const char *cmd, const d9_time_arg *from, const d9_time_arg *to);

/* The first and last timestamps of the trace files (0, 0 when none), which relative times
 * resolve against (common/time_arg.h): a one-pass reader cannot know them, so the files are
 * read once more. The files' problems are the main pass's to report. */
void d9_cli_trace_span(const d9_path_list *paths, uint64_t *first_ts, uint64_t *last_ts);

/* Whether --from/--to need that span: a time counted from the trace's start or end. */
bool d9_cli_window_is_relative(const d9_time_arg *from, const d9_time_arg *to);

#endif
