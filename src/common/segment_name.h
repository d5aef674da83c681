/* The names of trace files, parsed and written in one place for the writer (sinks/), the
 * readers' directory search (format/trace_paths.c) and the server's index (serve/).
 *
 * A segment is trace.{N}.bin, trace.{N}.bin.gz, trace.{N}.bin.zst or trace.{N}.bin.active, N
 * plain decimal digits (no sign, no space; leading zeros allowed) that fit in 64 bits. Any other
 * *.bin, *.bin.gz, *.bin.zst or *.bin.active file is still a trace file the readers take, just
 * not a numbered segment. */
#ifndef D9_COMMON_SEGMENT_NAME_H
#define D9_COMMON_SEGMENT_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum d9_segment_kind {
    D9_SEGMENT_SEALED = 0, /* trace.N.bin */
    D9_SEGMENT_GZIP = 1,   /* trace.N.bin.gz */
    D9_SEGMENT_ACTIVE = 2, /* trace.N.bin.active: being written, or left by a dead writer */
    D9_SEGMENT_ZSTD = 3,   /* trace.N.bin.zst */
} d9_segment_kind;
#define D9_SEGMENT_KINDS 4

/* Longest name d9_segment_name_format() writes, including the NUL. */
#define D9_SEGMENT_NAME_MAX sizeof("trace.18446744073709551615.bin.active")

/* A segment's N and kind from a file name (no directory); false for any other name. */
bool d9_segment_name_parse(const char *name, uint64_t *seq, d9_segment_kind *kind);
/* "trace.{seq}.bin..." into buf (D9_SEGMENT_NAME_MAX bytes are always enough). */
void d9_segment_name_format(char *buf, size_t size, uint64_t seq, d9_segment_kind kind);
/* ".bin", ".bin.gz", ".bin.active", ".bin.zst" */
const char *d9_segment_kind_suffix(d9_segment_kind kind);

/* A file name a directory search takes as a trace file: a segment's, or any other name
 * ending in .bin, .bin.gz, .bin.zst or .bin.active (with something before the suffix). */
bool d9_is_trace_file_name(const char *name);

#endif
