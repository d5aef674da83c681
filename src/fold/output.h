/* Where `dial9 fold` writes: one Parquet file per table and Hive partition
 * (DIR/TABLE/service=S/date=YYYY-MM-DD/hour=HH/part-H.parquet), written under a hidden
 * temporary name and renamed in only when the whole fold succeeded, so a reader never sees a
 * partial file and a failed fold leaves nothing visible.
 *
 * Beside each file, a hidden manifest (.part-H.segments) lists the segments folded into it
 * (their identities: content hash and size), and H is the hash of that list: a second fold of
 * the same segments writes the same name and changes nothing. A partition whose existing files
 * hold only segments of this fold's input is rewritten as one file (compaction: the old ones
 * are removed after the new one is in); one holding segments this fold does not have keeps
 * its files, and gets a new file with the rows of the segments it does not hold yet. */
#ifndef D9_FOLD_OUTPUT_H
#define D9_FOLD_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fold/hist_merge.h"
#include "fold/tables.h"
#include "parquet/pq_writer.h"

typedef struct d9f_output d9f_output;

/* ids: the identities of every input segment of this fold (NULL for one not folded). */
d9f_output *d9f_output_open(const char *dir, char *const *ids, size_t nids, const pq_options *opt,
                            char *err, size_t errlen);
/* The writer for a row of `table` at wall time wall_ns of segment seg_id (one of the ids),
 * or NULL: *skip true when the partition already holds that segment's rows (nothing to
 * write), false on an error (message in err). */
pq_writer *d9f_output_rows(d9f_output *o, d9f_table table, const char *service, int64_t wall_ns,
                           const char *seg_id, bool *skip, char *err, size_t errlen);
/* poll_hist's rows of a segment at wall_ns go to the partition's merge (hist_merge.h), which
 * the commit writes; NULL as d9f_output_rows (*skip: the partition holds that segment). */
d9f_hist_merge *d9f_output_hist(d9f_output *o, const char *service, int64_t wall_ns, const char *seg_id,
                                bool *skip, char *err, size_t errlen);
/* Closes every file and renames them in; replaced files are removed. Counts what it did in
 * *written (files renamed in), *unchanged (partitions already as they would be) and *rows.
 * 0, or -1 with err (what was not renamed in yet is removed). Frees o. */
int d9f_output_commit(d9f_output *o, FILE *log, size_t *written, size_t *unchanged, uint64_t *rows,
                      char *err, size_t errlen);
/* Removes every temporary file, and the partition directories left empty, and frees o:
 * nothing of this fold becomes visible. */
void d9f_output_abort(d9f_output *o);

/* "YYYY-MM-DD" and "HH" (UTC) of a wall time. */
void d9f_partition_date_hour(int64_t wall_ns, char date[11], char hour[3]);

#endif
