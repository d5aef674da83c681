/* Rotating segment writer: appends encoded trace bytes to
 *   {trace_dir}/{run_id}/trace.{N}.bin.active   (renamed to trace.{N}.bin when sealed)
 * rotating by size and by period, deleting the oldest sealed files (of this run and of earlier
 * runs under trace_dir) so the bytes on disk never exceed max_total_size.
 *
 * It never blocks the application: it runs on the recorder's background thread only. A write
 * error (disk full, directory deleted) loses that write, is counted, and the next write tries
 * again (recreating the directory and starting a new segment if needed). A segment whose fd
 * the program closed behind our back is opened again by its path and written on.
 *
 * Protocol with the caller (the collector, which owns the encoder):
 *  - before encoding, compare d9_segw_epoch() with the epoch of its last write: when it changed,
 *    the caller starts a new stream (format header; plus SegmentMetadataEvent and
 *    ClockSyncEvent when d9_segw_at_segment_start()), because the file's earlier bytes may be
 *    gone or belong to another segment;
 *  - keep each write within d9_segw_room(); call d9_segw_rotate() when it is too small or when
 *    d9_segw_rotation_due().
 */
#ifndef D9_SINKS_SEGMENT_WRITER_H
#define D9_SINKS_SEGMENT_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/sym_input.h"

typedef struct d9_segw_config {
    const char *trace_dir;   /* base directory; created if missing */
    const char *run_id;      /* this run's subdirectory name (unique per run) */
    uint64_t max_file_size;  /* bytes per segment file, > 0 */
    uint64_t max_total_size; /* bytes for all trace files under trace_dir, >= max_file_size */
    uint64_t rotation_ns;    /* seal a segment this long (CLOCK_MONOTONIC) after it was opened; 0 = never */
    bool memory;             /* memory mode (docs/flight-recorder.md): no file, no directory; each
                                sealed segment goes to on_flight as bytes (d9_segw_memory_sealed) */
} d9_segw_config;

typedef struct d9_segw_stats {
    uint64_t bytes_written;
    uint64_t bytes_lost;      /* bytes of failed writes */
    uint64_t write_errors;    /* failed writes */
    uint64_t segments_sealed;
    uint64_t files_deleted;   /* deleted to stay within max_total_size */
    uint64_t bytes_on_disk;   /* what the writer believes trace files under trace_dir hold */
    uint64_t fds_reopened;    /* the program closed the segment's fd: reopened by its path */
    int last_write_errno;     /* why the last failed write failed (ENOSPC, ...; 0: the disk budget) */
} d9_segw_stats;

typedef struct d9_segment_writer d9_segment_writer;

/* Called on the background thread with the path of each newly sealed file; needs_symbols:
 * d9_segw_note_needs_symbols was called while it was open (it holds addresses to name).
 * `symbols`: what the file holds to symbolize, as listed while it was written
 * (d9_segw_collect_symbols), the callee's to free (d9_sym_input_free, then free); NULL when
 * not collected or not complete (then the file must be read for it). */
typedef void (*d9_segw_sealed_fn)(const char *path, bool needs_symbols, d9_sym_input *symbols, void *ctx);

/* Create the run directory and index the trace files already under trace_dir (earlier runs
 * count against max_total_size). No segment file is created before the first write.
 * Returns NULL with a message in err on failure (bad config, directory not creatable). A disk
 * full (ENOSPC, EDQUOT) is no failure: the writer opens without its directory, which the first
 * write that finds room creates; the writes before it are lost and counted, with
 * stats.last_write_errno saying why. */
d9_segment_writer *d9_segw_open(const d9_segw_config *cfg, char *err, size_t errlen);

/* Seal the current segment (if it holds any bytes) and free everything. NULL is fine. */
void d9_segw_close(d9_segment_writer *w);

void d9_segw_set_on_sealed(d9_segment_writer *w, d9_segw_sealed_fn fn, void *ctx);

/* The last write went into the open segment with stacks in it: on_sealed says so, and a segment
 * it never says it of is not read again to be symbolized (nothing in it to name). */
void d9_segw_note_needs_symbols(d9_segment_writer *w);

/* List what each segment holds to symbolize while it is written, so that it need not be read
 * again: the caller adds to d9_segw_symbols() what each write holds (addresses of its stacks,
 * memory maps, boot id) before the write, and on_sealed hands the list over. Off by default. */
void d9_segw_collect_symbols(d9_segment_writer *w);
/* The list of the segment the next write lands in (allocated on first use); NULL when not
 * collecting or out of memory. It may hold more than the segment will (a lost write's
 * addresses), never less: a failed write makes the writer hand over NULL for that segment. */
d9_sym_input *d9_segw_symbols(d9_segment_writer *w);

/* A sealed file of this run changed size after it was sealed (the pipeline appended symbols,
 * or replaced it by a compressed one): `path` as given to on_sealed, its size now. Callable
 * from any thread; the writer counts the new size against max_total_size before its next
 * write. */
void d9_segw_note_resized(d9_segment_writer *w, const char *path, uint64_t new_size);
/* Each sealed file may grow by up to `bytes` (default 0) and never past max_file_size: the
 * writer leaves that much room in each segment (d9_segw_room) and counts every sealed file as
 * that much larger until its final size is noted, so the bytes on disk stay within
 * max_total_size at every moment. */
void d9_segw_set_growth_reserve(d9_segment_writer *w, uint64_t bytes);

/* Changes whenever the next write lands in a new file or after a failed write. */
uint64_t d9_segw_epoch(const d9_segment_writer *w);
/* True when the next write starts a segment file (no bytes in it yet). */
bool d9_segw_at_segment_start(const d9_segment_writer *w);
/* Bytes that still fit in the current segment (max_file_size - growth reserve - size so far). */
uint64_t d9_segw_room(const d9_segment_writer *w);
/* True when the current segment is older than rotation_ns and holds bytes. */
bool d9_segw_rotation_due(const d9_segment_writer *w, uint64_t now_mono_ns);
/* Seal the current segment; the next write opens trace.{N+1}.bin.active. Bumps the epoch. */
void d9_segw_rotate(d9_segment_writer *w);

/* Append len bytes (all of them, or none). 0 on success; -1 when the bytes were lost (counted
 * in the stats; the epoch changed, so the caller starts a new stream before writing again). */
int d9_segw_write(d9_segment_writer *w, const void *buf, size_t len);

void d9_segw_get_stats(const d9_segment_writer *w, d9_segw_stats *out);

/* The last words: room for a final segment that reaches the disk even when it is full and
 * never frees up (the drop accounting written at stop). When set (default 0: none), each time
 * a segment file is created and no reserve is held, a hidden file of `bytes` is created in the
 * run directory and its blocks allocated (posix_fallocate); it counts against max_total_size.
 * Call right after d9_segw_open. */
#define D9_SEGW_FINAL_RESERVE_NAME ".final-accounting"
void d9_segw_set_final_reserve(d9_segment_writer *w, uint64_t bytes);
bool d9_segw_has_final_reserve(const d9_segment_writer *w);
/* Seal the current segment, then write `buf` (one complete stream that stands alone: header,
 * metadata, clock sync, ...) into the reserve and rename it to the next trace.N.bin, sealed.
 * on_sealed is told, as for every sealed segment (the pipeline compresses and uploads it).
 * 0, or -1 when there is no reserve or it failed.
 * The reserve is used up either way: for the very end of a recording. */
int d9_segw_write_final(d9_segment_writer *w, const void *buf, size_t len);
/* While segments are uploaded (and deleted locally once stored), a sealed file the budget
 * deletes was never uploaded: counted here, for this run's files and those of earlier runs
 * that were to be uploaded (a .s3-run file, run_claim.h), so that the collector writes the
 * loss into the trace (UploadLossEvent, docs/schemas.md). Said once on stderr too. Off by
 * default. */
typedef struct d9_segw_upload_loss {
    uint64_t segments, bytes;      /* files and their bytes on disk, since the writer opened */
    int64_t first_start_ns;        /* wall clock: the earliest lost file's start (0: none) */
    int64_t last_end_ns;           /* and the latest one's last write */
} d9_segw_upload_loss;
void d9_segw_set_count_upload_loss(d9_segment_writer *w, bool on);
void d9_segw_get_upload_loss(const d9_segment_writer *w, d9_segw_upload_loss *out);
/* Every sealed segment, for the flight recorder (docs/flight-recorder.md), on the background
 * thread: in memory mode `bytes`/`len` are the segment (malloc'd, the callee's to free) and
 * `path` is NULL; on disk `path` is the sealed file and `bytes` NULL. start/end: CLOCK_MONOTONIC
 * when the segment was opened and sealed. */
typedef struct d9_segw_sealed_info {
    const char *path;
    uint8_t *bytes;
    size_t len;
    uint64_t seq;
    uint64_t start_mono_ns, end_mono_ns;
    d9_sym_input *symbols; /* memory mode: what it holds to name (d9_segw_collect_symbols), the
                            * callee's to free; NULL when not collected or not complete */
} d9_segw_sealed_info;
typedef void (*d9_segw_flight_fn)(const d9_segw_sealed_info *info, void *ctx);
void d9_segw_set_on_flight(d9_segment_writer *w, d9_segw_flight_fn fn, void *ctx);
/* Seal the open segment once CLOCK_MONOTONIC reaches at_mono_ns (a dump's window end), so a
 * dump need not wait for the next rotation. Any thread; the earliest pending request wins. */
void d9_segw_request_seal(d9_segment_writer *w, uint64_t at_mono_ns);
/* CLOCK_MONOTONIC when the open segment was opened, if it holds bytes; 0 when none does. Any
 * thread: cleared only after on_flight was told of the segment's seal. */
uint64_t d9_segw_open_since(const d9_segment_writer *w);

/* {trace_dir}/{run_id} */
const char *d9_segw_run_dir(const d9_segment_writer *w);
/* Its handle (trace_dir.h), the writer's: valid until d9_segw_close, and only while the run
 * directory is not made again after a deletion. */
int d9_segw_run_dir_fd(const d9_segment_writer *w);
/* Path of the segment being written, or NULL when none is open. */
const char *d9_segw_active_path(const d9_segment_writer *w);

#endif
