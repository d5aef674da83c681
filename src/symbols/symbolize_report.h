/* What in-process symbolization (the sealed-segment pipeline) did during the current or last
 * recording: process-wide counters, for tests and diagnostics. Thread-safe. */
#ifndef D9_SYMBOLS_SYMBOLIZE_REPORT_H
#define D9_SYMBOLS_SYMBOLIZE_REPORT_H

#include <stdint.h>

typedef struct d9_symbolize_report {
    uint64_t files_symbolized; /* symbols appended (or nothing needed) */
    uint64_t files_failed;     /* could not be read, scanned or appended to */
    uint64_t files_skipped;    /* left for later: out of time at stop */
    uint64_t files_dropped;    /* not even queued: queue full, or sealed after the stop */
    uint64_t addresses;        /* addresses resolved */
    uint64_t named;            /* of those, named by a symbol (the rest got module+0x...) */
    uint64_t entries;          /* SymbolTableEntry events written */
    uint64_t bytes_appended;
    uint64_t no_room;          /* resolved but left out: the segment was at its size limit */
    uint64_t files_from_writer; /* symbolized from the writer's list, without reading the file */
    uint64_t files_given_short; /* d9_symbolize_check_given: the writer's list missed something */
    char last_error[512];
} d9_symbolize_report;

/* A new recording starts: zero the counters. */
void d9_symbolize_report_reset(void);
/* Add `delta` (its last_error, when set, replaces ours). */
void d9_symbolize_report_add(const d9_symbolize_report *delta);
void d9_symbolize_report_get(d9_symbolize_report *out);

#endif
