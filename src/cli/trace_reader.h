/* Read every event of a list of trace files, one decoder per file, and record how each file
 * ended (complete, truncated, error, unreadable). Shared by the CLI commands so that they
 * report files and choose exit codes the same way. */
#ifndef D9_CLI_TRACE_READER_H
#define D9_CLI_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "format/trace_paths.h"
#include "format/decoder.h"

typedef struct d9_file_result {
    const char *path;
    bool opened;           /* false: could not be opened (message says why) */
    d9_dec_status status;  /* D9_DEC_END, D9_DEC_TRUNCATED, D9_DEC_ERROR or D9_DEC_DAMAGED */
    char message[600];     /* the decoder's message or the open error; "" when complete */
    d9_dec_stats stats;
} d9_file_result;

/* Called for every event in file order. `dec` is the file's decoder (its schemas, pools).
 * Return 0 to go on, nonzero to stop reading altogether. */
typedef int (*d9_event_fn)(void *ctx, const d9_event *ev, d9_decoder *dec, size_t file_index);

/* Decode paths->paths[i] into results[i] (paths->count entries), calling fn per event.
 * Returns D9_EXIT_OK when every file was read to its end (a torn tail counts as read) and
 * D9_EXIT_DATA when a file could not be opened, was empty (but an `.active` one), had a decode
 * error, was damaged (its intact streams after the damage are still read and passed to fn) or
 * referenced pool ids it never defined, or when a directory was skipped (paths->skipped). */
int d9_read_trace_files(const d9_path_list *paths, d9_event_fn fn, void *ctx,
                        d9_file_result *results);

/* One line on `out` per file that did not end cleanly ("dial9 <cmd>: <path>: <message>");
 * with errors_only, not for files that were merely truncated. */
void d9_report_file_problems(FILE *out, const char *cmd, const d9_file_result *results, size_t n,
                             bool errors_only);
/* One line on `out` per subdirectory the expansion of the PATH arguments could not read
 * ("dial9 <cmd>: <dir>: <why> (skipped...)"). */
void d9_report_skipped_dirs(FILE *out, const char *cmd, const d9_path_list *paths);
/* The file did not decode completely: unreadable, a decode error, damage, undefined pool ids. */
bool d9_file_failed(const d9_file_result *r);

/* "ok", "truncated", "damaged", "error" (also for a file that could not be opened) */
const char *d9_file_status_name(const d9_file_result *r);

#endif
