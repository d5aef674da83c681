/* Decoder of the dial9 trace format v1 (../shared/reference/trace-format.md): the one C reader
 * that every consumer uses (dial9 stats/dump/analyze/export/..., tests, fuzzers).
 *
 * A streaming pull API with bounded memory:
 *
 *     char err[256];
 *     d9_decoder *d = d9_dec_open_path("trace.0.bin.gz", NULL, err, sizeof err);
 *     if (!d) { fprintf(stderr, "%s\n", err); return 1; }
 *     d9_event ev;
 *     while (d9_dec_next(d, &ev) > 0) {
 *         const d9_value *w = d9_event_field(&ev, "worker_id");
 *         ...
 *     }
 *     if (d9_dec_state(d) != D9_DEC_END) fprintf(stderr, "%s\n", d9_dec_message(d));
 *     d9_dec_close(d);
 *
 * Input: a path, an fd, a FILE* or a memory buffer. gzip (magic 1f 8b) and zstd (a frame's
 * magic 28 b5 2f fd) are detected and decompressed as a stream (concatenated gzip members and
 * zstd frames too). Input is read in chunks; the buffer
 * grows only to hold one large frame, up to d9_dec_options.max_frame_bytes, so corrupt lengths
 * cannot make the decoder allocate without bound. Memory input is decoded in place.
 *
 * Everything the format allows is handled: concatenated streams (a header at a frame boundary
 * resets schemas, pools and the timestamp base), timestamp reset frames, schema re-registration
 * (identical: fine; different: error), schema annotations (exposed on the schema's fields),
 * pool frames with any number of entries, and pool references that come before the pool
 * definition (see d9_value.resolved).
 *
 * Malformed input never crashes or hangs the decoder. Damage inside a stream (a frame that
 * does not parse, or claims more bytes than any writer writes: D9_DEC_WRITER_FRAME_MAX) is
 * skipped to the next stream header, so every intact stream after it is still returned; the
 * data then ends with D9_DEC_DAMAGED, and a message naming the first damage's offset, stream
 * and reason, and the bytes skipped (d9_dec_stats.damaged_*). Input that is no dial9 trace
 * (a bad magic at the start) and the reader's own limits (memory) stop with D9_DEC_ERROR.
 * A torn tail, the last frame of the last stream incomplete (a file cut short by a crash),
 * ends the data with D9_DEC_TRUNCATED: every complete event before it was returned. An
 * incomplete frame with a stream header after its start is damage, not a torn tail. Offsets
 * are in the decoded (uncompressed) byte stream.
 *
 * Not thread-safe: one decoder per thread. Decoders are independent of each other.
 */
#ifndef D9_FORMAT_DECODER_H
#define D9_FORMAT_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/dec_bindings.h"
#include "format/wire.h"

typedef struct d9_decoder d9_decoder;

/* ------------------------------------------------------------------------------------------
 * Schemas
 * ---------------------------------------------------------------------------------------- */

/* A key/value string pair from a schema annotation frame (0x06), e.g. "metrique.unit"="ns".
 * Both strings are NUL-terminated copies (the length excludes the terminator). */
typedef struct d9_dec_annotation {
    const char *key;
    const char *value;
    uint32_t key_len;
    uint32_t value_len;
} d9_dec_annotation;

typedef struct d9_dec_field {
    const char *name;       /* NUL-terminated */
    uint16_t name_len;
    uint8_t type;           /* base type, D9_FT_I64 .. D9_FT_DYN_MAP (without the optional flag) */
    bool optional;          /* the wire type carried D9_FT_OPTIONAL (0x80) */
    uint16_t annotation_count;
    const d9_dec_annotation *annotations; /* may be replaced when a later 0x06 frame arrives */
} d9_dec_field;

/* A schema as the decoder keeps it. Schemas are interned for the decoder's lifetime: the same
 * (name, has_timestamp, fields) seen in several streams, under any type id, is ONE d9_dec_schema
 * with one stable pointer and one dense `index`. So a consumer keys its per-schema cache on
 * `index` (an array of d9_dec_schema_count() slots), and finds roles and fields in `bind`
 * instead of comparing strings per event. A schema name can map to
 * several d9_dec_schema when its field list differs between writers (e.g. dial9 versions). */
typedef struct d9_dec_schema {
    const char *name;          /* NUL-terminated */
    uint16_t name_len;
    bool has_timestamp;
    uint16_t field_count;
    const d9_dec_field *fields;
    uint16_t first_type_id;    /* type id it had when first registered (ids are per stream:
                                  d9_event.type_id is the one in effect for an event) */
    uint32_t index;            /* 0, 1, 2, ... in order of first registration */
    d9_dec_binding bind;       /* its role and known fields (format/dec_bindings.h) */
    /* The decoder's own field plan, compiled once when the schema is interned: each field's
     * wire type (D9_FT_* | D9_FT_OPTIONAL; then a 0 that ends them), and when every field has
     * a bounded size (fixed-width, varint, pool id), the most bytes they take (else 0): an
     * event with that many bytes buffered is read straight through, no bounds check per
     * field, each field's code jumping to the next one's. */
    const uint8_t *wire_types;
    uint32_t bounded_bytes;
    /* the bytes from an event frame's tag a run (d9_dec_next_run, and d9_dec_next's fast
     * path) needs buffered to read it: tag, type id, a time's 4-byte load, then
     * bounded_bytes; SIZE_MAX without a plan, and for a clock sync (it moves the range of
     * plausible times, which a run only checks against) */
    size_t run_bytes;
} d9_dec_schema;

/* Index of the field called `name` (NUL-terminated), or -1. */
int d9_schema_field_index(const d9_dec_schema *s, const char *name);
/* The value of annotation `key` on field `field_index`, or NULL. */
const char *d9_schema_annotation(const d9_dec_schema *s, int field_index, const char *key);

/* ------------------------------------------------------------------------------------------
 * Values and events
 * ---------------------------------------------------------------------------------------- */

typedef struct d9_value d9_value;

typedef struct d9_dec_str {
    const char *ptr; /* not NUL-terminated in general (pooled strings are); may hold any bytes */
    uint32_t len;
} d9_dec_str;

typedef struct d9_dec_kv {
    d9_dec_str key;
    d9_dec_str value;
} d9_dec_kv;

/* One decoded field value. Pointers inside point into decoder memory: valid until the next
 * d9_dec_next() call (pooled strings and stacks stay valid until the stream ends). */
struct d9_value {
    uint8_t type;     /* base type D9_FT_* (1..15) */
    bool present;     /* false only when an optional field is absent (the union is zeroed) */
    bool resolved;    /* pooled types: false when the pool id was not defined (yet) when the
                         event was read; str/stack are then empty and pool_id says which id.
                         It may still be defined later in the stream: d9_dec_pool_string() /
                         d9_dec_pool_stack() look it up then. Always true for other types. */
    uint32_t pool_id; /* pooled types: the pool id on the wire */
    union {
        uint64_t u;        /* Varint, U8, U16, U32; Bool as 0/1 */
        int64_t i;         /* I64 */
        double f;          /* F64 */
        d9_dec_str str;    /* String, Bytes, PooledString */
        struct {
            const uint64_t *addrs; /* leaf first */
            uint32_t count;
        } stack;           /* StackFrames, PooledStackFrames */
        struct {
            const d9_dec_kv *items;
            uint32_t count;
        } map;             /* StringMap */
        struct {
            const d9_value *items; /* DynamicList: count values. DynamicMap: 2*count values,
                                      key and value alternating (keys may be of any type) */
            uint32_t count;
        } list;            /* DynamicList, DynamicMap */
    };
};

typedef struct d9_event {
    const d9_dec_schema *schema;
    const d9_value *values;  /* schema->field_count values, in schema order */
    uint64_t ts_ns;          /* absolute CLOCK_MONOTONIC ns; 0 when !schema->has_timestamp */
    uint64_t offset;         /* byte offset of the event frame in the decoded input */
    uint32_t stream;         /* 0-based index of the stream (header) the event belongs to */
    uint16_t type_id;        /* type id of the event in its stream */
    bool implausible_ts;     /* ts_ns is more than D9_DEC_TIME_SLACK_NS outside the file's
                                clock sync range (see d9_dec_stats.implausible_times) */
} d9_event;

/* The value of field `name`, or NULL when the schema has no such field. Compares strings:
 * hot loops should cache d9_schema_field_index() per schema instead. */
const d9_value *d9_event_field(const d9_event *ev, const char *name);

/* The value as an unsigned integer when it is a present integer-like value (Varint, U8, U16,
 * U32, Bool, non-negative I64). Lets readers accept a field whose width differs by writer. */
static inline bool d9_value_uint(const d9_value *v, uint64_t *out) {
    if (!v) return false;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t type_present; /* a present Varint, what our encoder writes: one compare for both */
    memcpy(&type_present, v, sizeof type_present);
    if (__builtin_expect(type_present == (D9_FT_VARINT | 1u << 8), 1)) {
        *out = v->u;
        return true;
    }
#endif
    if (!v->present) return false;
    switch (v->type) {
    case D9_FT_VARINT: case D9_FT_U8: case D9_FT_U16: case D9_FT_U32: case D9_FT_BOOL:
        *out = v->u;
        return true;
    case D9_FT_I64:
        if (v->i < 0) return false;
        *out = (uint64_t)v->i;
        return true;
    default:
        return false;
    }
}

/* The value as a string when it is a present, resolved String, Bytes or PooledString. */
static inline bool d9_value_str(const d9_value *v, d9_dec_str *out) {
    if (!v || !v->present || !v->resolved) return false;
    if (v->type != D9_FT_STRING && v->type != D9_FT_BYTES && v->type != D9_FT_POOLED_STRING)
        return false;
    *out = v->str;
    return true;
}

/* "Varint", "PooledString", ... for a base type; "?" for an unknown one. */
const char *d9_field_type_name(uint8_t type);

/* ------------------------------------------------------------------------------------------
 * Opening and closing
 * ---------------------------------------------------------------------------------------- */

typedef struct d9_dec_options {
    size_t chunk_bytes;     /* bytes read from the input at a time (default 256 KiB) */
    size_t max_frame_bytes; /* largest single frame accepted (default 64 MiB; frames over
                               D9_DEC_WRITER_FRAME_MAX are damage whatever it says); a frame
                               that claims more is damage, not an allocation */
    size_t max_pool_bytes;  /* string + stack pool memory of one stream (default 1 GiB) */
    size_t max_schema_bytes;/* memory for all interned schemas and annotations (default 64 MiB) */
    bool stop_at_damage;    /* stop at the first damage with D9_DEC_ERROR, as the recorder's
                               scan of its own segments does, instead of skipping it to the
                               next stream header (default false) */
} d9_dec_options;

/* Fill `opt` with the defaults above. Passing NULL to the openers means the defaults. */
void d9_dec_options_init(d9_dec_options *opt);

/* Each opener returns NULL only when it cannot start at all (cannot open the file, out of
 * memory), with a message in err (may be NULL). Format problems show up in d9_dec_next(). */
/* d9_dec_open_path refuses anything but a regular file (a FIFO would block it forever). */
d9_decoder *d9_dec_open_path(const char *path, const d9_dec_options *opt, char *err,
                             size_t errlen);
/* Reads `fd` from its current position; closes it in d9_dec_close() when `take_ownership`. */
d9_decoder *d9_dec_open_fd(int fd, bool take_ownership, const d9_dec_options *opt, char *err,
                           size_t errlen);
/* Reads `f` from its current position; never closes it. */
d9_decoder *d9_dec_open_file(FILE *f, const d9_dec_options *opt, char *err, size_t errlen);
/* Decodes [data, data+len) in place (no copy unless compressed); the caller keeps the memory alive
 * and unchanged until d9_dec_close(). */
d9_decoder *d9_dec_open_mem(const void *data, size_t len, const d9_dec_options *opt, char *err,
                            size_t errlen);

/* The openers above read gzip and zstd (zlib and libzstd, dial9_reader). libdial9 links
 * neither: it opens uncompressed memory only (compressed data stops with D9_DEC_ERROR). In
 * place, as d9_dec_open_mem. */
d9_decoder *d9_dec_open_plain_mem(const void *data, size_t len, const d9_dec_options *opt,
                                  char *err, size_t errlen);

void d9_dec_close(d9_decoder *d);

/* Scan mode, for a reader that needs a few schemas of a large trace (the symbolizer's fast
 * scan, symbols/trace_scan.c): d9_dec_next returns only events whose schema `keep` accepts
 * (asked once per schema). The others are stepped over; with `skip_plans`, those made of
 * fixed-width and varint fields only without decoding their values (format/dec_skip_plan.h),
 * the rest by decoding them (skip_plans false decodes all of them: what the fast path must
 * agree with). Stepped-over events count in d9_dec_stats.events and keep the timestamps
 * right, but take no part in the implausible-time check. `stream_end` (may be NULL) is called
 * when a stream ends (a new header, the end of the data), while its pools are still there:
 * a late pool definition can complete a reference then. Set it before the first event. */
typedef struct d9_dec_scan {
    bool (*keep)(const d9_dec_schema *s, void *ctx);
    void (*stream_end)(d9_decoder *d, void *ctx);
    void *ctx;
    bool skip_plans;
} d9_dec_scan;
void d9_dec_set_scan(d9_decoder *d, const d9_dec_scan *scan);

/* ------------------------------------------------------------------------------------------
 * Decoding
 * ---------------------------------------------------------------------------------------- */

/* The largest frame any writer writes, with room to spare: ours are at most a symbol batch of
 * 256 names and files (symbols/symbol_stream.c), a stack pool entry, an event with strings of
 * at most 1 KiB (D9_MAX_STRING_ARG); dial9's are smaller (one pool entry a frame). A frame
 * that claims more has a corrupt length: damage, skipped to the next stream header. */
#define D9_DEC_WRITER_FRAME_MAX ((size_t)16 << 20)

typedef enum d9_dec_status {
    D9_DEC_RUNNING = 0, /* more events may follow */
    D9_DEC_END,         /* all input decoded, it ended at a frame boundary */
    D9_DEC_TRUNCATED,   /* a torn tail: the last frame of the last stream is incomplete, the
                           end of the data as a crash leaves it, not an error */
    D9_DEC_ERROR,       /* not a dial9 trace, a limit of the reader or an I/O error: decoding
                           stopped */
    D9_DEC_DAMAGED,     /* all input read, but damaged bytes were skipped (every intact stream
                           after them was returned): d9_dec_stats.damaged_* */
} d9_dec_status;

/* Decode up to the next event. Returns 1 with *ev filled; 0 at the end of the data (status
 * D9_DEC_END or D9_DEC_TRUNCATED); -1 on an error (D9_DEC_ERROR) and at the end of damaged
 * data (D9_DEC_DAMAGED). Once it returned 0 or -1 it keeps doing so. *ev and everything it
 * points to stay valid until the next call. No allocation per event (only when a larger frame
 * or new pool entries need room). Events of bounded field plans are read ahead a run at a
 * time (as d9_dec_next_run reads them) and handed out one a call; d9_dec_get_stats and
 * d9_dec_stop_offset count only the events handed out, as if each had been read alone. */
int d9_dec_next(d9_decoder *d, d9_event *ev);

/* A run of events at once, for a reader whose per-event work is small (dial9 fold; the bench
 * and test_decoder_instructions count both ways): up to
 * max_events of the event frames next in the buffered input, each as d9_dec_next would have
 * returned it (the same schema, values, time, offset and stream, the same stats), into
 * evs[], their values into vals[] (at most max_values in all; each event's own, valid until
 * the stream ends, the pooled ones as d9_dec_next's). Only what the bounded field plans read
 * straight through with every pool id defined and a plausible time, all of one stream (a
 * header is another frame): the run ends before
 * anything else (another frame, a schema without a plan, fewer bytes buffered than its
 * bound, scan mode, a clock sync), and returns 0 when that is the next event: then
 * d9_dec_next reads it (refilling, judging damage, naming errors as always). It returns 0
 * too while events d9_dec_next read ahead are left (d9_dec_next hands them out); after a
 * d9_dec_next that followed a run's 0, none are. */
int d9_dec_next_run(d9_decoder *d, d9_event *evs, uint32_t max_events, d9_value *vals, uint32_t max_values);

d9_dec_status d9_dec_state(const d9_decoder *d);

/* Why decoding stopped, e.g. "truncated at offset 4046993 (stream 13): incomplete event
 * frame", "error at offset 0 (before any stream header): bad magic ..." or "damaged at offset
 * 812 (stream 2): unknown frame tag 0x07 ...; skipped 5120 bytes to the next stream header at
 * offset 5932". "" while running or after a clean end. */
const char *d9_dec_message(const d9_decoder *d);

/* Decoded-input offset where decoding stopped (the start of the frame that was truncated or
 * bad); equals the bytes consumed after a clean end. After damage: the start of a torn final
 * frame (d9_dec_stats.torn_tail), else the end of the data: cutting the data there drops no
 * more than that one frame. */
uint64_t d9_dec_stop_offset(const d9_decoder *d);

typedef struct d9_dec_stats {
    uint64_t streams;            /* headers */
    uint64_t schema_frames;
    uint64_t timestamp_resets;
    uint64_t string_pool_frames;
    uint64_t stack_pool_frames;
    uint64_t annotation_frames;
    uint64_t events;
    uint64_t bytes;              /* decoded bytes consumed: the end of the last complete frame */
    uint64_t input_bytes;        /* bytes read from the input (compressed size for gzip, zstd) */
    uint64_t string_pool_entries;
    uint64_t stack_pool_entries;
    uint64_t unresolved_refs;    /* pooled values that were undefined when their event was read */
    uint64_t late_definitions;   /* pool ids defined after a reference to them */
    uint64_t undefined_pool_ids; /* distinct pool ids referenced but never defined in their
                                    stream (a format error the stream could not fix) */
    uint64_t damaged_regions;    /* damage skipped to the next stream header (D9_DEC_DAMAGED) */
    uint64_t damaged_bytes;      /* bytes skipped over for it */
    uint64_t first_damage_offset;/* where the first damaged frame starts */
    bool torn_tail;              /* the data ended inside its last frame */
    bool gzip;                   /* the input was gzip-compressed */
    bool zstd;                   /* the input was zstd-compressed */
    /* A decode warning, not an error: timestamps more than D9_DEC_TIME_SLACK_NS outside the
     * range of the file's ClockSyncEvent timestamps (checked from the first one on; a clock
     * sync is itself implausible when it is outside that range and its monotonic and wall
     * clock times disagree with the first one's by more than the slack). */
    uint64_t implausible_times;
    uint64_t first_implausible_ts, first_implausible_offset;
    uint64_t clock_sync_first_ns, clock_sync_last_ns; /* the range (both 0: no clock sync) */
} d9_dec_stats;

/* How far outside its clock sync range a timestamp may be before it is implausible: more than
 * any segment of ours spans (they rotate within minutes unless told otherwise). */
#define D9_DEC_TIME_SLACK_NS (24ull * 3600 * 1000000000)

/* The counts as of this call (up to the last event handed out): ask again after more events. */
const d9_dec_stats *d9_dec_get_stats(const d9_decoder *d);

/* Every schema interned so far: d9_dec_schema_at(d, i) for i < d9_dec_schema_count(d). */
uint32_t d9_dec_schema_count(const d9_decoder *d);
d9_dec_schema *d9_dec_schema_at(const d9_decoder *d, uint32_t index);

/* Pool lookups in the current stream (for references that were unresolved when read).
 * Return false when the id is not defined (yet). */
bool d9_dec_pool_string(const d9_decoder *d, uint32_t pool_id, d9_dec_str *out);
bool d9_dec_pool_stack(const d9_decoder *d, uint32_t pool_id, const uint64_t **addrs,
                       uint32_t *count);

#endif
