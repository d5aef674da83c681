/* Pipeline step, opt-in: the fleet tables of each uploaded segment, written beside it in S3.
 *
 * With DIAL9_S3_TABLES=1, every segment stored in S3 is folded, before its local file is
 * removed, by `dial9 fold --no-commit -q SEGMENT --to s3://BUCKET/PREFIX/tables` (a child
 * process: the fold and its Parquet writer are the CLI's, not the recorder's; the program
 * DIAL9_FOLD_COMMAND, default `dial9` on PATH). --no-commit uploads the segment's files and
 * their manifests without listing the prefix or writing its commit marker, so hosts never
 * race on the marker; `dial9 fold s3://BUCKET/PREFIX --to s3://BUCKET/PREFIX/tables` later
 * compacts them into one file per partition and commits (docs/fleet-tables.md).
 *
 * Off by default: the fold reads each segment once more on the observed host (CPU, page cache)
 * and stores 14 more objects per segment (7 tables, each with its manifest), which a fleet
 * pays in requests; folding where the segments already are, on a machine of its own, costs
 * the hosts nothing. A failed fold is said once on stderr (and counted), never retried, and
 * never keeps the segment from being removed: the tables are derived data that a later fold
 * rebuilds from the segments. */
#ifndef D9_SINKS_STEP_TABLES_H
#define D9_SINKS_STEP_TABLES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct d9_tables_step d9_tables_step;

/* NULL when DIAL9_S3_TABLES is unset or 0 (a value other than 0 or 1 is said on stderr and
 * taken as 0), or when it cannot be set up (said). */
d9_tables_step *d9_tables_step_new(const char *bucket, const char *prefix);
/* Folds the uploaded segment at path into the tables. give_up (may be NULL) is polled while
 * the fold runs: true (the exit's time is up) stops it (SIGTERM), so the fold never holds the
 * program's exit past the pipeline's bound. 0, or -1 (said once per run). */
int d9_tables_step_run(d9_tables_step *t, const char *path, bool (*give_up)(void *), void *ctx);
/* Segments folded and not folded so far. */
void d9_tables_step_counts(const d9_tables_step *t, uint64_t *folded, uint64_t *failed);
void d9_tables_step_free(d9_tables_step *t);

#endif
