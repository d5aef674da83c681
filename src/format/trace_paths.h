/* Turn the PATH arguments of a CLI command into the list of trace files to read: a file is
 * taken as given; a directory is searched recursively for trace files (trace.N.bin,
 * trace.N.bin.gz, trace.N.bin.zst, trace.N.bin.active and any other *.bin / *.bin.gz /
 * *.bin.zst / *.bin.active, see
 * common/segment_name.h), ordered by their run directory, then by segment number N (other
 * names after the segments), then by name. Shared by every subcommand and by `dial9 serve`'s
 * index (serve/trace_index.c). */
#ifndef D9_FORMAT_TRACE_PATHS_H
#define D9_FORMAT_TRACE_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/segment_name.h" /* d9_is_trace_file_name: what a directory search picks up */

typedef struct d9_path_list {
    char **paths;
    size_t count;
    size_t cap;
    char **skipped;       /* "DIR: why" of each subdirectory that could not be read */
    size_t skipped_count;
} d9_path_list;

/* Append the trace files named by args[0..n). Returns 0, or -1 with a message in err when an
 * argument does not exist, cannot be read (a directory without permission) or a directory
 * holds no trace file. A subdirectory that cannot be read is skipped and named in
 * out->skipped. */
int d9_expand_paths(int n, char *const *args, d9_path_list *out, char *err, size_t errlen);
/* Append a copy of path. 0, or -1 when out of memory. */
int d9_path_list_add(d9_path_list *l, const char *path);
void d9_path_list_free(d9_path_list *l);

/* Reads an s3://bucket/prefix argument into local files (fleet/s3_fetch.c); set by the dial9
 * command's main, NULL elsewhere (such an argument is then a missing file). */
extern int (*d9_remote_paths)(const char *arg, d9_path_list *out, char *err, size_t errlen);

#endif
