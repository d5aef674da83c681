/* The collector, run by the recorder's background thread: drains every thread's ring, merges
 * the records in time order, encodes them in the dial9 format and hands the bytes to the
 * segment writer, starting each stream and segment with what makes it readable alone. */
#ifndef D9_CORE_COLLECTOR_H
#define D9_CORE_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9/dial9.h"

typedef struct d9_collector d9_collector;

typedef struct d9_collector_config {
    const d9_config *cfg;   /* validated user config */
    const char *run_id;
    const char *service;    /* resolved service name */
    const char *clock_name; /* "tsc" or "monotonic" */
    bool schedstat_active;
} d9_collector_config;

/* Opens the segment writer and writes the first segment's preamble, so an unwritable trace
 * directory is reported here. NULL with a message in err on failure. */
d9_collector *d9_collector_open(const d9_collector_config *cc, char *err, size_t errlen);

/* Drain everything recorded so far and write it. Returns the fullest ring's fill (0..1) seen,
 * so the caller can drain more often under load. */
double d9_collector_drain(d9_collector *c);

/* Final drain, seal the last segment, free. Fills final_stats (may be NULL) first. */
void d9_collector_close(d9_collector *c, d9_stats *final_stats);

void d9_collector_get_stats(d9_collector *c, d9_stats *out);
const char *d9_collector_run_dir(d9_collector *c);

#endif
