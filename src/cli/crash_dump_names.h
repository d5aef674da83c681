/* A crash dump's names (docs/flight-recorder.md): a crash dump is written inside a signal
 * handler, which cannot name addresses, so its segments (memory mode's all, disk mode's open
 * one) carry none. The readers (`dial9 analyze`, `stats`, `serve`) name them when they read the
 * dump, from the binaries on disk, as `dial9 symbolize DUMP` would: the segments' own memory
 * maps and boot id say which module an address is in. The names are appended to the segments
 * in place, so the next reader finds them (a segment that names all it holds gains nothing). */
#ifndef D9_CLI_CRASH_DUMP_NAMES_H
#define D9_CLI_CRASH_DUMP_NAMES_H

#include <stdio.h>

/* For each of paths[0..n) that is a complete crash dump, or a directory holding some (a
 * directory of dumps): name its uncompressed segments' addresses. One line on `say` per dump
 * that got names or could not get them (`cmd`: the command, for the line). */
void d9_name_crash_dumps(const char *cmd, int n, char **paths, FILE *say);

#endif
