/* poll_hist's rows of one output file, merged per key (docs/fleet-tables.md, `poll_hist`): a
 * run writes many segments an hour, and a fleet query's time is the number of rows it sums,
 * so the rows of one run, hour (the file's partition), spawn location, worker and bucket are
 * summed into one whatever the number of segments they came from. A compacted partition (one
 * file) then has one row per key.
 *
 * The merged rows are what one histogram of all their polls gives (hist_rows.h): counts
 * summed; the exact min (max) in the key's lowest (highest) bucket, the bucket's bounds in the
 * others; wall_time the first poll's. `segment` is the segment's id when the row counts one
 * segment's polls, else "" (the file's manifest and the `segments` table list them). Rows go
 * out sorted by instance, boot, run, spawn location, worker and bucket: the same bytes
 * whatever order the segments were folded in. */
#ifndef D9_FOLD_HIST_MERGE_H
#define D9_FOLD_HIST_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "fold/hist_rows.h"
#include "parquet/pq_writer.h"

typedef struct d9f_hist_merge d9f_hist_merge;

/* Rows held before they are summed in place (then as many more): ~90 MB. */
#define D9F_HIST_MERGE_AT ((size_t)1 << 20)

d9f_hist_merge *d9f_hist_merge_new(void);
/* One that sums its rows each time it holds merge_at more (the tests' small bound). */
d9f_hist_merge *d9f_hist_merge_new_at(size_t merge_at);
void d9f_hist_merge_free(d9f_hist_merge *m);

/* The identity of the rows added next (copied): 0, or -1 out of memory. */
int d9f_hist_merge_segment(d9f_hist_merge *m, const char *instance, const char *boot, const char *run,
                           const char *segment);
/* A row of the current segment's histogram of (loc, worker), whose first poll was at wall:
 * 0, or -1 out of memory. */
int d9f_hist_merge_add(d9f_hist_merge *m, const char *loc, size_t loc_len, uint64_t worker, int64_t wall,
                       const d9f_hist_row *r);
/* The merged rows into w (a poll_hist writer): 0, or -1 with err. */
int d9f_hist_merge_write(d9f_hist_merge *m, pq_writer *w, char *err, size_t errlen);

#endif
