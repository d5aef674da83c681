/* The traces `dial9 serve` offers: every trace file under the served directory, grouped into
 * runs (the directory that holds them, relative to the root; "." for the root itself) and
 * ordered by segment number. Each segment is decoded once to learn its time range, event
 * count and how it ends (complete, truncated, error, or past the bound of what one segment may
 * decode to: a few hundred KB of zstd can hold gigabytes, and the server answers nothing while
 * it indexes); the result is cached for as long as the
 * file keeps its size, mtime and inode, so a refresh only decodes new or growing segments.
 *
 * Every file is opened relative to a directory fd on the root, following no symlink
 * (open_beneath.h), and decoded from that fd: symlinks are left out, and a directory swapped
 * for a symlink during a scan cannot make it read a file outside the root. Not thread-safe:
 * the server uses it from its one request thread. */
#ifndef D9_SERVE_TRACE_INDEX_H
#define D9_SERVE_TRACE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/string_table.h"
#include "format/decoder.h"
#include "serve/serve_selection.h"

typedef struct d9_segment {
    char *path;         /* root/rel: the key of the cache */
    const char *rel;    /* relative to the root, points into path */
    const char *name;   /* base name, points into path */
    long long number;   /* N of trace.N.bin..., -1 for other names */
    bool gzip_name, active;
    /* identity of the file as decoded */
    uint64_t size, ino, dev;
    int64_t mtime_ns;
    /* what decoding found */
    d9_dec_status status;
    char message[256];
    uint64_t events;
    bool have_ts;
    uint64_t first_ns, last_ns; /* of its timestamped events */
    uint64_t clean_bytes;       /* decoded bytes up to the end of the last complete frame: what a
                                   concatenation takes, so a torn tail cannot break what follows */
    bool gzip;
    bool seen;                  /* still on disk at the last refresh */
    /* what a person picks a run by: the service's name (its SegmentMetadataEvent), the wall
       clock (its first ClockSyncEvent: realtime minus monotonic), lost events and task dumps */
    char service[128];
    bool have_wall;
    int64_t wall_minus_mono_ns;
    uint64_t drops, dumps;
    bool too_large;             /* decoding stopped at the index's bound (max_decoded_bytes): the
                                   times, events and clean_bytes are of what came before it */
    bool remote;                /* a selection's segment not in the cache (yet): size is the
                                   listed one, nothing decoded */
    const char *key;            /* a selection's segment: its object's key (the selection's
                                   string), which the file's key sidecar must name; else NULL */
} d9_segment;

typedef struct d9_run {
    char *name;           /* relative directory, "." for the root */
    const d9_sel_run *selected; /* its entry in the selection (times from the keys), or NULL */
    d9_segment **segs;    /* in segment order */
    size_t count;
} d9_run;

typedef struct d9_trace_index {
    char *root;           /* real path of the served directory (as it was at the start) */
    int root_fd;          /* the served directory: every file is opened beneath it */
    d9_run *runs;         /* sorted by name */
    size_t run_count;
    d9_string_table cache_paths; /* path -> dense index into cache */
    d9_segment **cache;   /* every segment known, by path */
    size_t cache_count, cache_cap;
    uint64_t decoded_bytes; /* decoded by refreshes so far (for the log) */
    uint64_t max_decoded_bytes; /* of one segment, at most (0: no bound) */
    const d9_serve_selection *selection; /* set: only its runs and segments are indexed */
} d9_trace_index;

/* 0, or -1 with a message when the root cannot be opened as a directory. */
int d9_trace_index_init(d9_trace_index *ix, const char *root, char *err, size_t errlen);
void d9_trace_index_free(d9_trace_index *ix);

/* Rescan the root and decode what changed. With a selection: its runs and segments, whether in
 * the cache or not (those not there are `remote`, with the listed size); a file of another size
 * than listed, or whose key sidecar (common/cache_sidecar.h) names another key or is missing,
 * counts as not there. 0, or -1 when out of memory. */
int d9_trace_index_refresh(d9_trace_index *ix, char *err, size_t errlen);

/* Re-check one segment (it may have grown) and decode it again when it changed. False when the
 * file is gone or no longer a regular file reachable beneath the root without a symlink, for a
 * remote segment, and for a selection's segment replaced since the refresh by a file whose
 * key sidecar names another object (another dial9 fetched another recording to that path). */
bool d9_segment_revalidate(d9_trace_index *ix, d9_segment *s);

const d9_run *d9_trace_index_run(const d9_trace_index *ix, const char *name);

/* The index as JSON (see docs/serve.md). */
void d9_trace_index_json(const d9_trace_index *ix, FILE *out);

#endif
