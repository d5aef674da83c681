/* Turn the PATH arguments of a CLI command into the list of trace files to read: a file is
 * taken as given; a directory is searched recursively for trace files (trace.N.bin,
 * trace.N.bin.gz, trace.N.bin.active and any other *.bin / *.bin.gz), ordered by their run
 * directory, then by segment number N, then by name. Shared by every subcommand. */
#ifndef D9_CLI_TRACE_PATHS_H
#define D9_CLI_TRACE_PATHS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct d9_path_list {
    char **paths;
    size_t count;
    size_t cap;
} d9_path_list;

/* Append the trace files named by args[0..n). Returns 0, or -1 with a message in err when an
 * argument does not exist or a directory holds no trace file. */
int d9_expand_paths(int n, char *const *args, d9_path_list *out, char *err, size_t errlen);
void d9_path_list_free(d9_path_list *l);

/* True for a file name a directory search picks up. */
bool d9_is_trace_file_name(const char *name);

#endif
