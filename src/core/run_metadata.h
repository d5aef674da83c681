/* What a run says about itself at the start of every segment (SegmentMetadataEvent), and again
 * within a segment after it changed (collector_encode.c: d9_col_encode_metadata_change): service,
 * host, pid, run id, kernel boot id, library version, clock, which data sources are active and
 * why others are not, and `runtime.<name>` → worker ids. */
#ifndef D9_CORE_RUN_METADATA_H
#define D9_CORE_RUN_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include "format/encoder.h"

#define D9_META_MAX 48

typedef struct d9_run_metadata {
    char *keys[D9_META_MAX];
    char *vals[D9_META_MAX];
    int count;
    /* counts the changes (a new key, or a key's value replaced by another): the collector
     * compares it with the version it last wrote, to write changed metadata before the next
     * segment starts (collector_encode.c: d9_col_encode_metadata_change) */
    uint64_t version;
} d9_run_metadata;

/* Add (or replace) an entry; silently ignored past D9_META_MAX or on no memory. Setting the
 * value a key has already is no change (the version stays). */
void d9_run_metadata_set(d9_run_metadata *m, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The value of `key`, or NULL. */
const char *d9_run_metadata_get(const d9_run_metadata *m, const char *key);
/* Fill the entries that describe this process and host. */
void d9_run_metadata_describe_process(d9_run_metadata *m, const char *service, const char *run_id);
/* Append every entry, then the current runtime.<name> entries, to a StringMap value. */
void d9_run_metadata_encode(const d9_run_metadata *m, d9_buf *b, d9_pool_frame *map);
void d9_run_metadata_free(d9_run_metadata *m);

/* A new run id: UTC start time, pid and random bits, so runs sort by time and never collide. */
void d9_make_run_id(char *out, size_t len);
/* The program's short name (for the default service name). */
const char *d9_program_name(void);

#endif
