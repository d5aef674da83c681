/* What `dial9 stats` says of a flight recorder's dump directory (docs/flight-recorder.md): its
 * manifest (trigger, window, what it holds and lacks), or that it is incomplete (no manifest:
 * the dump was interrupted, its segments are all there is). */
#ifndef D9_CLI_DUMP_MANIFEST_H
#define D9_CLI_DUMP_MANIFEST_H

#include <stdbool.h>
#include <stdio.h>

/* For each of paths[0..n) that is a dump directory: its manifest on `out` (when `out`), and a
 * line on `warn` when it has none. Returns the number of incomplete dumps. */
int d9_print_dump_manifests(FILE *out, FILE *warn, int n, char **paths);

#endif
