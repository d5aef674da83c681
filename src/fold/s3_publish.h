/* `dial9 fold ... --to s3://BUCKET/PREFIX`: the tables in S3, all or nothing by a commit marker.
 *
 * S3 has no rename, so the local scheme (output.h: hidden names renamed in) becomes:
 *   1. the prefix is listed; its manifests (.part-H.segments) and the commit marker are read, its
 *      Parquet files stood for by empty placeholders in a private staging directory;
 *   2. the local fold runs on that directory, deciding as it does locally which partitions are
 *      unchanged, which get a new file and which are compacted into one;
 *   3. every file the fold added is uploaded (PUT, retried), Parquet files before their
 *      manifests; names are content-derived (part-H, H the hash of the segments a file holds),
 *      so an upload never replaces a visible file with other content;
 *   4. the commit marker PREFIX/_dial9_fold.json, one object written last in one PUT, names every
 *      Parquet file of the tables as they now are; unchanged, it is not written again;
 *   5. the files the marker no longer names (compacted away) are deleted.
 * A reader that trusts the marker (docs/fleet-tables.md gives the DuckDB query) sees the
 * previous fold or this one, whole: a fold that stops before step 4 leaves the old marker, and
 * its uploads are only orphans that the next fold finds by name and does not upload again. A
 * second fold of the same segments lists, reads the manifests and writes nothing. */
#ifndef D9_FOLD_S3_PUBLISH_H
#define D9_FOLD_S3_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "fold/fold.h"

#define D9F_S3_MARKER "_dial9_fold.json"

typedef struct d9f_s3_result {
    size_t uploaded, deleted; /* objects */
    int marker_written;       /* 1: the marker changed */
} d9f_s3_result;

/* d9f_fold into s3://BUCKET/PREFIX (url). 0, or -1 with err (the old marker is then in place).
 * commit false (`--no-commit`, the pipeline's tables beside each segment, sinks/step_tables.h):
 * the fold's files and manifests are uploaded without listing the prefix, and neither the
 * marker nor any other object is touched: the next committing fold finds them by their
 * manifests and compacts or commits them. */
int d9f_fold_to_s3(char *const *paths, size_t n, const char *url, bool commit, const pq_options *opt, FILE *log,
                   FILE *info, d9f_result *res, d9f_s3_result *s3res, char *err, size_t errlen);

#endif
