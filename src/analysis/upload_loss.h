/* UploadLossEvent (docs/schemas.md): sealed segments a recorder's disk budget deleted before
 * they were uploaded. Each record holds its run's totals so far, repeated at every segment
 * start: per run the record with the most segments wins; runs add up. Shared by the readers
 * (stats, analyze, check) so they say the same. */
#ifndef D9_ANALYSIS_UPLOAD_LOSS_H
#define D9_ANALYSIS_UPLOAD_LOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/decoder.h"

typedef struct d9a_upload_loss_run {
    char *run;
    uint64_t segments, bytes;
    uint64_t first_start_unix_ns, last_end_unix_ns;
} d9a_upload_loss_run;

typedef struct d9a_upload_loss {
    d9a_upload_loss_run *runs;
    size_t n, cap;
} d9a_upload_loss;

/* Take one event if it is an UploadLossEvent; 0, or -1 when out of memory. */
int d9a_upload_loss_note(d9a_upload_loss *l, const d9_event *ev);
/* Totals over runs; false when nothing was lost. */
bool d9a_upload_loss_total(const d9a_upload_loss *l, d9a_upload_loss_run *total);
/* "2 segments (3.1 MB, 2026-12-01 12:00:01 to 12:00:09 UTC) deleted before upload" */
void d9a_upload_loss_describe(const d9a_upload_loss_run *total, char *buf, size_t len);
void d9a_upload_loss_free(d9a_upload_loss *l);

#endif
