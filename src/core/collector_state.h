/* The collector's state, shared by its parts (one concept each):
 *   collector.c           lifecycle and the outline of one drain
 *   collector_merge.c     reading every thread's ring and the sources' events in time order
 *   collector_encode.c/.h records and source events into the dial9 wire format, a stream
 *                         (and segment) starting with what makes it readable alone
 *   collector_handover.c  bytes to the segment writer, and the accounting of what was lost
 * Private to src/core/collector*.c. */
#ifndef D9_CORE_COLLECTOR_STATE_H
#define D9_CORE_COLLECTOR_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/collector.h"
#include "core/event_types.h"
#include "core/run_metadata.h"
#include "core/source.h"
#include "core/source_batch.h"
#include "core/stack_table.h"
#include "core/string_table.h"
#include "core/thread_buffer.h"
#include "format/encoder.h"
#include "format/schemas.h"
#include "sinks/segment_writer.h"

#define FLUSH_BYTES (256u * 1024u)
#define FINAL_RESERVE_BYTES (16u * 1024u)
#define MAX_SOURCES 8
#define SCHEMA_SLOTS (D9_SCH_FIRST_CUSTOM + D9_MAX_EVENT_TYPES)
#define DUMP_MAX_FRAMES 128
/* Changed metadata is written again within the segment at most this often (and at most once a
 * drain); the run's last drain writes it whatever the time. A whole SegmentMetadataEvent is
 * ~3 KB with the defaults, and some notes change every second (the switch stacks' pacing, the
 * governor's gaps): at most ~0.3 KB/s, a trace's size even when the program idles. */
#define META_REWRITE_NS (10 * 1000000000ull)

/* One event ready to encode: the record's values after the thread's decoding state (current
 * task, last park) has been applied, so it can be encoded twice if a rotation interrupts it. */
typedef struct out_event {
    uint16_t schema;
    uint64_t ts;
    uint64_t v[5];
    const char *s[3];
    const d9_event_type *custom;
    const uint64_t *payload; /* custom: payload words; stacks: frames */
    uint32_t nframes;
} out_event;

/* A thread's unread records during one drain. */
typedef struct cursor {
    d9_thread *t;
    uint64_t pos, end;
    const uint64_t *base;  /* the words of the ring that holds pos ... */
    uint64_t mask;
    d9_ring *ring;         /* ... that ring, */
    uint64_t next_start;   /* and where the next one in the chain starts (UINT64_MAX: none yet) */
    uint64_t next_ts; /* ts of the record at pos (valid while pos < end) */
    uint64_t words;   /* its length */
} cursor;

struct d9_collector {
    d9_segment_writer *w;
    d9_run_metadata meta;
    uint32_t meta_workers;     /* worker ids below this are in the segment's runtime.<name> lists */
    uint64_t meta_version_written; /* meta.version as of the last SegmentMetadataEvent encoded */
    uint64_t meta_written_ns;      /* ... and when (the drain's time) */
    uint64_t meta_rewrite_ns;      /* META_REWRITE_NS (a test's own) */
    bool meta_in_out;              /* `out` holds a changed metadata's rewrite: a failed write redoes it */
    d9_clock_map clock;
    uint64_t now_ticks, now_ns;
    uint64_t merge_heads_ns;   /* taken before this merge read the threads' heads (collector_switch_stack.h) */
    uint64_t schedstat_res_ns;

    d9_buf out, scratch;
    uint64_t out_events;       /* events in `out` not yet written */
    bool out_has_stacks;       /* `out` holds a stack pool entry: its segment needs symbols */
    bool list_symbols;         /* d9_collector_collect_symbols: the writer's list is kept up */
    d9_stream_state st;
    uint64_t epoch;
    bool stream_open;          /* false once the writer moved to another file or lost bytes */
    uint64_t room;             /* the writer's room, as of its last change (only we change it) */
    uint64_t stream_no;        /* marks below are valid when equal to this */
    uint64_t schema_mark[SCHEMA_SLOTS];
    uint64_t *loc_mark;
    size_t loc_mark_len;
    uint32_t loc_prefix;       /* locations 1 .. loc_prefix are all written in stream loc_prefix_stream: */
    uint64_t loc_prefix_stream;/* the merge's fast path tests a location with one compare */
    uint32_t fast_ready;       /* the merge's fast path: hook schemas seen written in stream ... */
    uint64_t fast_ready_stream;/* ... fast_ready_stream (collector_merge.c) */
    d9_string_table strings;
    d9_stack_table stacks;

    d9_dump_unwind_fn dump_unwind;
    uint64_t dump_frames[DUMP_MAX_FRAMES]; /* the task dump being encoded */
    d9_source *sources[MAX_SOURCES];
    size_t source_count;
    d9_src_batch batch;      /* this drain's source events, sorted */
    size_t next_src;         /* the first of them not merged yet */
    uint64_t src_ts;         /* its time (UINT64_MAX: none) */
    uint64_t run_others_m1;  /* a thread's run in the merge: the other threads' earliest time - 1 */
    d9_src_batch held;       /* source events of threads newer than this drain's list, for the next */
    bool hold_new_threads;   /* false for the last drain at close: nothing is left for later */
    d9_src_batch seg_batch;  /* what sources add at a segment start */

    bool upload_loss_on;          /* uploading: the writer counts segments deleted before upload */
    uint64_t upload_loss_written; /* its count as of the last UploadLossEvent encoded */
    uint64_t write_drops_pending; /* events lost to failed writes, not yet reported */
    uint64_t write_drops_in_out;  /* the part of it reported inside `out` */
    uint64_t src_lost_in_out;     /* sources' lost counts reported inside `out` */
    bool write_failed;            /* a write failed in this drain: retry on the next one only */

    d9_thread **threads;
    size_t thread_count;
    uint64_t threads_ns;     /* taken before `threads` was listed: a thread not in it registered later */
    size_t tid_last;         /* where in `threads` the last thread found by its id was */
    cursor *cursors;
    size_t cursor_cap;

    _Atomic uint64_t st_recorded, st_written, st_write_dropped, st_ring_dropped;
    uint64_t recorded_in_drain;
    _Atomic uint32_t st_threads;
    /* copies of the writer's counters, so other threads never touch the writer */
    _Atomic uint64_t st_bytes, st_write_errors, st_sealed, st_deleted;
};

/* collector_merge.c */
/* A fresh snapshot of the registered threads (and cursors for them); false when out of memory. */
bool d9_col_refresh_threads(d9_collector *c);
/* Every thread's records and the sources' events up to now, encoded in time order. Returns the
 * fullest ring's fill (0..1). */
double d9_col_merge(d9_collector *c);
void d9_col_source_event_to_out(d9_collector *c, const d9_src_event *se, out_event *e);

/* collector_encode.c (the hot parts inline in collector_encode.h) */
void d9_col_encode_preamble(d9_collector *c);
/* The run's metadata again, whole, when it changed since the segment's last SegmentMetadataEvent
 * and meta_rewrite_ns passed since then (`last`: whatever the time): part of the drain's one
 * write. */
void d9_col_encode_metadata_change(d9_collector *c, bool last);
void d9_col_open_stream(d9_collector *c);

/* collector_handover.c */
void d9_col_writer_changed(d9_collector *c);
void d9_col_flush_out(d9_collector *c);
void d9_col_report_ring_drops(d9_collector *c, d9_thread *t, uint64_t cumulative, uint64_t ts);
void d9_col_emit_write_drop_report(d9_collector *c);
/* UploadLossEvent when the writer's count of segments deleted before upload grew (or at every
 * segment start once there is one, as part of the preamble) */
void d9_col_encode_upload_loss(d9_collector *c, bool segment_start);
/* End of a drain: the rings read are released, drops the threads could not report are. */
void d9_col_hand_over(d9_collector *c);
void d9_col_write_final_accounting(d9_collector *c);
void d9_col_publish_writer_stats(d9_collector *c);

#endif
