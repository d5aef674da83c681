/* One segment folded into the tables: its identity and wall clock first (a scan for the
 * SegmentMetadataEvent and the first ClockSyncEvent), then every event once, rows handed to
 * the output as they come (polls, sched) and at the end (poll_hist, segments). */
#ifndef D9_FOLD_SEGMENT_H
#define D9_FOLD_SEGMENT_H

#include <stdint.h>
#include <stdio.h>

#include "fold/output.h"

typedef struct d9f_segment_stats {
    uint64_t events, polls;
    bool truncated; /* a torn tail: every complete event was folded */
} d9f_segment_stats;

/* 0, or -1 with the reason in err (the segment cannot be read, is damaged, has no clock sync,
 * or writing failed). */
int d9f_fold_segment(d9f_output *out, const char *path, const char *seg_id, uint64_t file_bytes,
                     d9f_segment_stats *st, char *err, size_t errlen);

#endif
