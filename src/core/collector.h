/* The collector, run by the recorder's background thread: drains every thread's ring, merges
 * the records in time order, encodes them in the dial9 format and hands the bytes to the
 * segment writer, starting each stream and segment with what makes it readable alone. */
#ifndef D9_CORE_COLLECTOR_H
#define D9_CORE_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/source.h"
#include "dial9/dial9.h"
#include "sinks/segment_writer.h"

typedef struct d9_collector d9_collector;

typedef struct d9_collector_config {
    const d9_config *cfg;   /* validated user config */
    const char *run_id;
    const char *service;    /* resolved service name */
    const char *clock_name; /* "tsc" or "monotonic" */
    bool schedstat_active;
    bool memory;            /* flight recorder's memory mode: segments sealed to on_flight, no file */
    uint64_t memory_segment_ns, memory_segment_bytes; /* and their length and size at most */
} d9_collector_config;

/* Opens the segment writer (creating the run directory). NULL with a message in err. */
d9_collector *d9_collector_open(const d9_collector_config *cc, char *err, size_t errlen);

/* After sources are added and noted: write the first segment's preamble, so an unwritable
 * trace directory is reported to d9_start. 0, or -1 with a message in err. A full disk is no
 * failure (it may free up): 0, with why nothing is written yet in err (and on stderr). */
int d9_collector_start(d9_collector *c, char *err, size_t errlen);

/* Metadata of every segment; sources add entries before d9_collector_start. */
struct d9_run_metadata;
struct d9_run_metadata *d9_collector_metadata(d9_collector *c);
/* Say in the metadata whether data source `name` is active, and why not (or how). */
void d9_collector_note_source(d9_collector *c, const char *name, bool active, const char *detail);
/* Called with each sealed segment's path, on the background thread (keep it short: queue). */
void d9_collector_set_on_sealed(d9_collector *c, d9_segw_sealed_fn fn, void *ctx);
/* A sealed segment's size changed after sealing (any thread): see d9_segw_note_resized. */
void d9_collector_note_resized(d9_collector *c, const char *path, uint64_t new_size);
/* Sealed segments will grow by up to `bytes` each (symbols): see d9_segw_set_growth_reserve. */
void d9_collector_expect_growth(d9_collector *c, uint64_t bytes);
/* List, for each segment, what it holds to symbolize while encoding it (the writer hands the
 * list to on_sealed), so the pipeline need not read the segment again. Before the start. */
void d9_collector_collect_symbols(d9_collector *c);

/* Drain everything recorded so far and write it. Returns the fullest ring's fill (0..1) seen,
 * so the caller can drain more often under load. */
double d9_collector_drain(d9_collector *c);

/* Final drain, seal the last segment, free. Fills final_stats (may be NULL) first. */
void d9_collector_close(d9_collector *c, d9_stats *final_stats);

void d9_collector_get_stats(d9_collector *c, d9_stats *out);

/* Add a data source (before the background thread starts draining). The collector calls it on
 * every drain and closes it in d9_collector_close. False when there are too many. */
struct d9_source;
bool d9_collector_add_source(d9_collector *c, struct d9_source *s);
const char *d9_collector_run_dir(d9_collector *c);
/* The run directory's handle (segment_writer.h: d9_segw_run_dir_fd). */
int d9_collector_run_dir_fd(d9_collector *c);

/* The flight recorder (core/flight_recorder.h): every sealed segment, and a seal at a dump's
 * window end (d9_segw_set_on_flight, d9_segw_request_seal). */
void d9_collector_set_on_flight(d9_collector *c, d9_segw_flight_fn fn, void *ctx);
void d9_collector_request_seal(d9_collector *c, uint64_t at_mono_ns);
uint64_t d9_collector_open_since(d9_collector *c); /* d9_segw_open_since, any thread */

/* Who turns task dump records into frames (before the background thread starts draining).
 * Without one, task dumps are written with an empty stack. */
void d9_collector_set_dump_unwinder(d9_collector *c, d9_dump_unwind_fn fn);

#endif
