/* `dial9 fold`: segments into the fleet tables (docs/fleet-tables.md), all or nothing. */
#ifndef D9_FOLD_FOLD_H
#define D9_FOLD_FOLD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parquet/pq_writer.h"

typedef struct d9f_result {
    size_t segments, truncated, files_written, partitions_unchanged;
    uint64_t events, polls, rows;
} d9f_result;

/* Folds paths[0..n) into the tables under dir. Every segment is read first; one that cannot
 * be read (or has no clock sync) is named in a line on `log` and the fold then writes
 * nothing. `info` (may be NULL) gets a line per file written or compacted. 0, or -1 with err (the failing segment's name and why; the count of failures). */
int d9f_fold(char *const *paths, size_t n, const char *dir, const pq_options *opt, FILE *log,
             FILE *info, d9f_result *res, char *err, size_t errlen);

/* A segment's identity, the same for a copy anywhere, compressed or not, and after `dial9
 * symbolize` appended its symbols: "r" and a 64-bit hash of its run (run_id, boot_id, host
 * from its SegmentMetadataEvent) and its file name without .gz/.zst; for a segment without a
 * run_id (dial9's own), "c" and a hash of its content. *size: its size in bytes. -1 when it
 * cannot be read. */
int d9f_segment_id(const char *path, char *out, size_t len, uint64_t *size);

#endif
