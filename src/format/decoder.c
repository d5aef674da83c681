/* Decoder of the dial9 trace format v1 (see decoder.h).
 *
 * Frames carry no length, so each frame is parsed from a window [frame, end) of the input
 * buffer. A parser that runs past the window returns P_MORE with the number of bytes the
 * frame needs at least; the driver then reads more input (growing the buffer only for a
 * frame that does not fit, up to max_frame_bytes) and parses the frame again from its start.
 * Parsers therefore change no state until the whole frame has been seen ("commit" below).
 * At the end of the input, P_MORE means a truncated final frame. */
#include "format/decoder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/u64_set.h"
#include "format/dec_input.h"
#include "format/dec_pool.h"
#include "format/dec_schema.h"
#include "format/dec_skip_plan.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

enum { P_OK, P_MORE, P_ERR };
enum { POOL_STRING = 0, POOL_STACK = 1 };

#define TYPE_IDS 65536u
#define MAX_DYN_DEPTH 16        /* nesting of DynamicList/DynamicMap values */
#define EV_PENDING_MAX 16       /* unresolved pool ids remembered per event */
#define PENDING_MAX (1u << 20)  /* pool ids referenced before their definition, per stream */
#define PENDING_KEEP_SLOTS 4096 /* a stream end keeps the pending set up to this size */
#define POOL_ENTRY_COST 48u     /* bytes charged per pool entry for its table slot */
#define RUN_AHEAD 32            /* events d9_dec_next reads at once (read_run) */
#define RUN_AHEAD_VALUES 256    /* their values at most */

struct d9_decoder {
    d9_dec_options opt;

    /* input window: buf[pos, len) is undecoded; buf[0] is at decoded offset `base` */
    d9_input *in;          /* NULL when decoding caller memory in place */
    d9_unwrap_fn unwrap;   /* wraps gzip and zstd input (dec_open.c); NULL: plain data only */
    d9_input_codec codec;  /* what sniff() found */
    /* scan mode (d9_dec_set_scan): what the reader keeps, per schema index */
    d9_dec_scan scan_mode; /* keep == NULL: off */
    uint8_t *scan;         /* SCAN_* by schema index */
    d9_skip_plan *plans;   /* by schema index, for SCAN_PLAN */
    uint32_t scan_cap;
    /* by type id, this stream: 0 not looked up, 1 not stepped over by a plan, else the
     * plan's ops | has_timestamp (the hot loop of scan_run: one load to the ops) */
    uintptr_t *scan_ids;
    uint32_t scan_ids_cap;
    size_t scan_room;      /* bytes the largest plan's event may take, with tag and type id
                              (at least 8: see delta24) */
    const uint8_t *buf;
    uint8_t *own;          /* our buffer (== buf unless in place) */
    size_t cap, pos, len;
    uint64_t base;
    bool eof;
    bool sniffed;          /* compression detection done */

    d9_dec_status status;
    uint64_t stop_off;
    char msg[512];
    char why[200];         /* reason and context of an error, see fail() */
    char ctx[160];
    uint64_t why_at;
    bool fatal;            /* the failure fail() recorded is a limit of ours, not damage */

    /* damage skipped so far (d9_dec_stats.damaged_*): the first region's description */
    char damage[360];

    /* per-stream state */
    bool in_stream;
    uint64_t ts_base;
    d9_dec_schema **types; /* type id -> schema; types_cap entries (grows up to TYPE_IDS) */
    uint32_t types_cap;
    uint16_t *defined;     /* type ids set in this stream, to clear them on reset */
    uint32_t ndefined, defined_cap;
    d9_arena pool_arena;
    d9_pool strings, stacks;
    uint64_t pool_entries;
    d9_u64_set pending;    /* pool ids referenced before being defined (kind << 32 | id) */

    /* per-event state */
    d9_arena ev_arena;
    bool ev_arena_dirty;
    d9_value *values;
    uint32_t values_cap;
    /* d9_dec_next's events read ahead as a run (read_run) and handed out one a call: the
     * events [run_next, run_count) of run_evs, their values in run_vals; run_end is the
     * decoded offset after the last, run_events0 the events counted before the first.
     * Nothing else reads the input while any is left, and the position and counts are
     * brought up to the events handed out only when asked (sync_run). */
    d9_event *run_evs;
    d9_value *run_vals;
    uint32_t run_next, run_count;
    uint64_t run_end, run_events0;
    uint32_t ev_unresolved;
    uint32_t ev_npending;
    uint64_t ev_pending[EV_PENDING_MAX];

    d9_schema_reg reg;
    d9_dec_stats st;

    /* plausible times: [time_lo, time_hi] once a clock sync was seen (see d9_dec_stats) */
    const d9_dec_schema *clock_sync; /* the ClockSyncEvent schema, its realtime_ns field */
    int clock_sync_real;
    uint64_t time_lo, time_hi;
    uint64_t sync_first_real;
};

typedef struct cur {
    const uint8_t *p;
    const uint8_t *end;
    const uint8_t *frame; /* the frame's tag byte */
    uint64_t need;        /* P_MORE: bytes from `frame` the frame needs at least */
    d9_decoder *d;
} cur;

static const uint8_t k_empty[8];

/* ---- little-endian reads (compile to plain loads) ---- */

static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t le24(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}
static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }
/* le24 in two instructions: a 4-byte load (the caller keeps it inside the buffer), masked. */
static inline uint32_t delta24(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t w;
    memcpy(&w, p, 4);
    return w & 0xffffff;
#else
    return le24(p);
#endif
}

/* ---- stopping: messages with offset and stream ---- */

static uint64_t off_of(const d9_decoder *d, const uint8_t *at) {
    return d->base + (uint64_t)(at - d->buf);
}

static void stream_label(const d9_decoder *d, char *out, size_t n) {
    if (d->st.streams == 0) snprintf(out, n, "before any stream header");
    else snprintf(out, n, "stream %" PRIu64, d->st.streams - 1);
}

/* A message quotes names from the data (a schema's, a field's): their control characters are
 * written as \xNN, so that a message printed on a terminal cannot act on it. */
static void escape_message(d9_decoder *d) {
    char out[sizeof d->msg];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)d->msg; *p && n + 9 < sizeof out; p++) {
        bool c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
        if (*p < 0x20 || *p == 0x7f || c1) {
            n += (size_t)snprintf(out + n, sizeof out - n, c1 ? "\\xc2\\x%02x" : "\\x%02x", c1 ? p[1] : p[0]);
            p += c1;
        } else {
            out[n++] = (char)*p;
        }
    }
    out[n] = '\0';
    memcpy(d->msg, out, n + 1);
}

__attribute__((format(printf, 4, 5))) static void stop(d9_decoder *d, d9_dec_status status,
                                                       uint64_t off, const char *fmt, ...) {
    char why[256], where[48];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    stream_label(d, where, sizeof where);
    snprintf(d->msg, sizeof d->msg, "%s at offset %" PRIu64 " (%s): %s",
             status == D9_DEC_TRUNCATED ? "truncated" : "error", off, where, why);
    escape_message(d);
    d->status = status;
    d->stop_off = off;
}

static const char *frame_name(uint8_t tag) {
    switch (tag) {
    case D9_FRAME_SCHEMA: return "schema";
    case D9_FRAME_EVENT: return "event";
    case D9_FRAME_STRING_POOL: return "string pool";
    case D9_FRAME_STACK_POOL: return "stack pool";
    case D9_FRAME_TIMESTAMP_RESET: return "timestamp reset";
    case D9_FRAME_ANNOTATIONS: return "schema annotations";
    case D9_MAGIC0: return "stream header";
    default: return "unknown";
    }
}

/* An error inside the frame at c->frame; `at` is the offending byte. Only records the reason:
 * d9_dec_next() composes the message once the frame's parser has added its context. */
__attribute__((format(printf, 3, 4))) static int fail(cur *c, const uint8_t *at, const char *fmt,
                                                      ...) {
    d9_decoder *d = c->d;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
    d->why_at = off_of(d, at);
    d->ctx[0] = '\0';
    d->fatal = false;
    return P_ERR;
}

/* A limit of the reader (memory), not damage of the data: decoding stops there. */
#define fail_limit(c, ...) (fail((c), __VA_ARGS__), (c)->d->fatal = true, P_ERR)

/* The reason fail() recorded in the frame at `frame`, with the frame's name and context. */
static void describe_failure(d9_decoder *d, const uint8_t *frame, char *out, size_t n) {
    uint64_t foff = off_of(d, frame);
    char at[40] = "";
    if (d->why_at != foff) snprintf(at, sizeof at, " (at byte %" PRIu64 ")", d->why_at);
    if (*frame == D9_MAGIC0 || !d->in_stream || !strcmp(frame_name(*frame), "unknown"))
        snprintf(out, n, "%s%s", d->why, at);
    else
        snprintf(out, n, "%s frame%s%s: %s%s", frame_name(*frame), d->ctx[0] ? ", " : "", d->ctx,
                 d->why, at);
}

/* The message for an error that fail() recorded in the frame at `frame`. */
static void compose_error(d9_decoder *d, const uint8_t *frame) {
    char why[sizeof d->why + sizeof d->ctx + 80];
    describe_failure(d, frame, why, sizeof why);
    stop(d, D9_DEC_ERROR, off_of(d, frame), "%s", why);
}

static int more(cur *c, const uint8_t *at, uint64_t n) {
    c->need = (uint64_t)(at - c->frame) + n;
    return P_MORE;
}

/* A length or count that makes its frame larger than any a writer writes is damage, even
 * when the input holds that many bytes: reading it would swallow the streams after it. */
#define TOO_BIG(c, at, n, what)                                                            \
    do {                                                                                   \
        if (UNLIKELY((uint64_t)(n) > D9_DEC_WRITER_FRAME_MAX))                             \
            return fail((c), (at), "%s %" PRIu64 " makes the frame larger than any writer " \
                        "writes, %zu (a corrupt length)", (what), (uint64_t)(n),           \
                        D9_DEC_WRITER_FRAME_MAX);                                          \
    } while (0)

#define NEED(c, n)                                                                         \
    do {                                                                                   \
        if (UNLIKELY((uint64_t)((c)->end - (c)->p) < (uint64_t)(n)))                       \
            return more((c), (c)->p, (uint64_t)(n));                                       \
    } while (0)

static inline int get_varint(cur *c, uint64_t *out) {
    const uint8_t *p = c->p;
    if (LIKELY(p < c->end && *p < 0x80)) {
        *out = *p;
        c->p = p + 1;
        return P_OK;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (p >= c->end) return more(c, c->p, (uint64_t)(p - c->p) + 1);
        uint8_t b = *p++;
        if (i == 9 && b > 1) return fail(c, p - 1, "varint does not fit in 64 bits");
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            c->p = p;
            return P_OK;
        }
    }
    return fail(c, c->p, "varint longer than 10 bytes"); /* unreachable: byte 10 checked */
}

static bool valid_type(uint8_t t) {
    uint8_t base = t & 0x7f;
    return base >= D9_FT_I64 && base <= D9_FT_DYN_MAP;
}

/* ---- field values ---- */

static void *ev_alloc(d9_decoder *d, size_t n, size_t align) {
    d->ev_arena_dirty = true;
    return d9_arena_alloc(&d->ev_arena, n, align);
}

static void note_unresolved(d9_decoder *d, unsigned kind, uint32_t id) {
    d->ev_unresolved++;
    if (d->ev_npending < EV_PENDING_MAX)
        d->ev_pending[d->ev_npending++] = (uint64_t)kind << 32 | id;
}

static int decode_value(cur *c, uint8_t wt, d9_value *v, int depth);

static int decode_dynamic(cur *c, d9_value *v, int depth) {
    d9_decoder *d = c->d;
    bool is_map = v->type == D9_FT_DYN_MAP;
    if (depth >= MAX_DYN_DEPTH) return fail(c, c->p, "dynamic values nested too deeply");
    NEED(c, 4);
    uint32_t n = le32(c->p);
    uint64_t items = is_map ? 2 * (uint64_t)n : n;
    TOO_BIG(c, c->p, items * 2, "dynamic value size");
    /* every item is a tag byte plus at least one byte of value */
    if ((uint64_t)(c->end - c->p) - 4 < items * 2) return more(c, c->p, 4 + items * 2);
    c->p += 4;
    d9_value *arr = ev_alloc(d, (size_t)items * sizeof *arr, 16);
    if (!arr) return fail(c, c->p, "%s of %" PRIu32 " entries is too large to decode",
                          d9_field_type_name(v->type), n);
    for (uint64_t i = 0; i < items; i++) {
        NEED(c, 1);
        uint8_t tag = *c->p;
        if (!valid_type(tag)) return fail(c, c->p, "bad value type tag 0x%02x", tag);
        c->p++;
        int r = decode_value(c, tag, &arr[i], depth + 1);
        if (r != P_OK) return r;
    }
    v->list.items = arr;
    v->list.count = n;
    return P_OK;
}

static int decode_value(cur *c, uint8_t wt, d9_value *v, int depth) {
    d9_decoder *d = c->d;
    v->type = wt & 0x7f;
    v->present = true;
    v->resolved = true;
    v->pool_id = 0;
    if (wt & D9_FT_OPTIONAL) {
        NEED(c, 1);
        uint8_t flag = *c->p;
        if (flag == 0) {
            c->p++;
            v->present = false;
            memset(&v->list, 0, sizeof v->list);
            return P_OK;
        }
        if (flag != 1) return fail(c, c->p, "bad presence byte %u of an optional value", flag);
        c->p++;
    }
    switch (v->type) {
    case D9_FT_VARINT:
        return get_varint(c, &v->u);
    case D9_FT_U8:
        NEED(c, 1);
        v->u = *c->p++;
        return P_OK;
    case D9_FT_U16:
        NEED(c, 2);
        v->u = le16(c->p);
        c->p += 2;
        return P_OK;
    case D9_FT_U32:
        NEED(c, 4);
        v->u = le32(c->p);
        c->p += 4;
        return P_OK;
    case D9_FT_I64:
        NEED(c, 8);
        v->i = (int64_t)le64(c->p);
        c->p += 8;
        return P_OK;
    case D9_FT_F64: {
        NEED(c, 8);
        uint64_t bits = le64(c->p);
        memcpy(&v->f, &bits, sizeof bits);
        c->p += 8;
        return P_OK;
    }
    case D9_FT_BOOL:
        NEED(c, 1);
        v->u = *c->p++ != 0;
        return P_OK;
    case D9_FT_STRING:
    case D9_FT_BYTES: {
        NEED(c, 4);
        uint32_t n = le32(c->p);
        TOO_BIG(c, c->p, n, "length");
        NEED(c, 4 + (uint64_t)n);
        v->str.ptr = (const char *)c->p + 4;
        v->str.len = n;
        c->p += 4 + (size_t)n;
        return P_OK;
    }
    case D9_FT_POOLED_STRING: {
        NEED(c, 4);
        uint32_t id = le32(c->p);
        c->p += 4;
        v->pool_id = id;
        const d9_pool_entry *e = d9_pool_find(&d->strings, id);
        if (LIKELY(e != NULL)) {
            v->str.ptr = e->data;
            v->str.len = e->len;
        } else {
            v->resolved = false;
            v->str.ptr = (const char *)k_empty;
            v->str.len = 0;
            note_unresolved(d, POOL_STRING, id);
        }
        return P_OK;
    }
    case D9_FT_POOLED_STACK: {
        NEED(c, 4);
        uint32_t id = le32(c->p);
        c->p += 4;
        v->pool_id = id;
        const d9_pool_entry *e = d9_pool_find(&d->stacks, id);
        if (LIKELY(e != NULL)) {
            v->stack.addrs = e->data;
            v->stack.count = e->len;
        } else {
            v->resolved = false;
            v->stack.addrs = (const uint64_t *)k_empty;
            v->stack.count = 0;
            note_unresolved(d, POOL_STACK, id);
        }
        return P_OK;
    }
    case D9_FT_STACK: {
        NEED(c, 4);
        uint32_t n = le32(c->p);
        TOO_BIG(c, c->p, 8 * (uint64_t)n, "stack size");
        NEED(c, 4 + 8 * (uint64_t)n);
        uint64_t *a = ev_alloc(d, (size_t)n * 8, 8);
        if (!a) return fail(c, c->p, "stack of %" PRIu32 " frames is too large to decode", n);
        const uint8_t *p = c->p + 4;
        for (uint32_t i = 0; i < n; i++, p += 8) a[i] = le64(p);
        v->stack.addrs = a;
        v->stack.count = n;
        c->p = p;
        return P_OK;
    }
    case D9_FT_STRING_MAP: {
        NEED(c, 4);
        uint32_t n = le32(c->p);
        TOO_BIG(c, c->p, 8 * (uint64_t)n, "string map size");
        NEED(c, 4 + 8 * (uint64_t)n); /* every entry has two u32 lengths */
        c->p += 4;
        d9_dec_kv *kv = ev_alloc(d, (size_t)n * sizeof *kv, 16);
        if (!kv) return fail(c, c->p, "string map of %" PRIu32 " entries is too large", n);
        for (uint32_t i = 0; i < n; i++) {
            NEED(c, 4);
            uint32_t kl = le32(c->p);
            TOO_BIG(c, c->p, kl, "key length");
            NEED(c, 8 + (uint64_t)kl);
            uint32_t vl = le32(c->p + 4 + kl);
            TOO_BIG(c, c->p + 4 + kl, vl, "value length");
            NEED(c, 8 + (uint64_t)kl + vl);
            kv[i].key.ptr = (const char *)c->p + 4;
            kv[i].key.len = kl;
            kv[i].value.ptr = (const char *)c->p + 8 + kl;
            kv[i].value.len = vl;
            c->p += 8 + (size_t)kl + vl;
        }
        v->map.items = kv;
        v->map.count = n;
        return P_OK;
    }
    case D9_FT_DYN_LIST:
    case D9_FT_DYN_MAP:
        return decode_dynamic(c, v, depth);
    default:
        return fail(c, c->p, "bad field type 0x%02x", wt);
    }
}

/* ---- bounded events, read straight through: d9_dec_next's fast path, and runs ---- */

/* A value's type, present, resolved and pool_id in one store: four byte stores through a
 * uint8_t lvalue may alias anything, and made the compiler reload the loop's state per field. */
_Static_assert(offsetof(d9_value, type) == 0 && offsetof(d9_value, present) == 1 &&
                   offsetof(d9_value, resolved) == 2 && offsetof(d9_value, pool_id) == 4,
               "d9_value's header is the 8 bytes set_header writes");
static inline void set_header(d9_value *v, uint8_t type, bool present, uint32_t pool_id) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t h = (uint64_t)type | (uint64_t)present << 8 | (uint64_t)1 << 16 | (uint64_t)pool_id << 32;
    memcpy(v, &h, sizeof h);
#else
    v->type = type;
    v->present = present;
    v->resolved = true;
    v->pool_id = pool_id;
#endif
}

/* Read the run of event frames at *pp (a tag) whose schemas have a bounded field plan
 * (d9_dec_schema.run_bytes), up to max_events into evs[] and their values into vals[] (at most
 * max_values in all), with *ts_base the stream's time base, moved on by each; *pp is left at
 * the first frame not read. Every event as parse_event reads it, with no bounds check per
 * field (its bound's bytes are buffered). The run stops before anything else, which
 * parse_event then reads from the start: another frame, an undefined type id, a schema
 * without a run (no field plan, a clock sync), fewer bytes buffered than its bound, a time
 * outside the plausible range (check_time judges it; a time of 0 is never implausible, but
 * is outside this one compare unless the range starts at 0), an undefined pool id, a bad
 * presence byte, a varint over 64 bits.
 * Threaded: each field jumps to the next one's code (wire_types ends with a 0), the last to
 * the next event's; one function, so that the loop's state stays in registers. */
static __attribute__((noinline)) uint32_t
read_run(const d9_decoder *d, const uint8_t **pp, const uint8_t *end, uint64_t *ts_base, d9_event *evs,
         uint32_t max_events, d9_value *vals, uint32_t max_values) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init" /* the range first, then the known types */
    static const void *const op[256] = {
        [0 ... 255] = &&stop, /* not a bounded type: run_bytes would be SIZE_MAX */
        [0] = &&event_end,
        [D9_FT_VARINT] = &&varint,
        [D9_FT_VARINT | D9_FT_OPTIONAL] = &&optional_varint,
        [D9_FT_U8] = &&u8,
        [D9_FT_BOOL] = &&boolean,
        [D9_FT_U16] = &&u16,
        [D9_FT_U32] = &&u32,
        [D9_FT_I64] = &&i64,
        [D9_FT_F64] = &&f64,
        [D9_FT_POOLED_STRING] = &&pooled_string,
        [D9_FT_POOLED_STACK] = &&pooled_stack,
    };
#pragma GCC diagnostic pop
    /* few values live across the fields (the event's own go to *ev at its start), and the
     * loop's in locals: the values' stores may alias the decoder's fields */
    d9_dec_schema *const *types = d->types;
    const uint32_t types_cap = d->types_cap, stream = (uint32_t)(d->st.streams - 1);
    const uint64_t time_lo = d->time_lo, time_span = d->time_hi - d->time_lo; /* plausible: ts - lo <= span */
    const uint64_t off_base = d->base - (uint64_t)(uintptr_t)d->buf; /* + a frame's address: its offset */
    d9_event *ev = evs, *const evs_end = evs + max_events;
    d9_value *v = vals;
    const d9_value *const vals_end = vals + max_values;
    /* values up to here leave room for any schema's: one compare an event (0: check each) */
    const uintptr_t vals_safe = max_values >= d->reg.max_fields ? (uintptr_t)(vals_end - d->reg.max_fields) : 0;
    const uint8_t *frame = *pp, *p, *w;
    uint64_t base = *ts_base, next_base;
#define NEXT_FIELD goto *op[*w++]
next_event:
    if (UNLIKELY(ev == evs_end) || UNLIKELY((size_t)(end - frame) < 3) || *frame != D9_FRAME_EVENT) goto stop;
    {
        uint16_t type_id = le16(frame + 1);
        const d9_dec_schema *s = LIKELY(type_id < types_cap) ? types[type_id] : NULL;
        if (UNLIKELY(!s) || UNLIKELY((size_t)(end - frame) < s->run_bytes) ||
            (UNLIKELY((uintptr_t)v > vals_safe) &&
             (size_t)((const char *)vals_end - (const char *)v) < s->field_count * sizeof *v))
            goto stop;
        p = frame + 3;
        uint64_t ts = 0;
        next_base = base;
        if (s->has_timestamp) {
            ts = base + delta24(p);
            p += 3;
            if (UNLIKELY(ts - time_lo > time_span)) goto stop;
            next_base = ts;
        }
        ev->schema = s;
        ev->values = v;
        ev->ts_ns = ts;
        ev->offset = off_base + (uint64_t)(uintptr_t)frame;
        ev->stream = stream;
        ev->type_id = type_id;
        ev->implausible_ts = false;
        w = s->wire_types;
        NEXT_FIELD;
    }
optional_varint:
    if (*p == 0) {
        set_header(v, D9_FT_VARINT, false, 0);
        memset(&v->list, 0, sizeof v->list);
        p++;
        v++;
        NEXT_FIELD;
    }
    if (*p != 1) goto stop;
    p++;
    /* fall through */
varint: {
    set_header(v, D9_FT_VARINT, true, 0);
    uint64_t b0 = p[0];
    if (LIKELY(b0 < 0x80)) {
        v->u = b0;
        p += 1;
        v++;
        NEXT_FIELD;
    }
    uint64_t b1 = p[1];
    if (LIKELY(b1 < 0x80)) {
        v->u = (b0 & 0x7f) | b1 << 7;
        p += 2;
        v++;
        NEXT_FIELD;
    }
    uint64_t x = (b0 & 0x7f) | (b1 & 0x7f) << 7;
    /* three to five bytes step by step (thread CPU times, task ids: most longer varints),
     * then the loop */
    uint64_t b2 = p[2];
    if (b2 < 0x80) {
        v->u = x | b2 << 14;
        p += 3;
        v++;
        NEXT_FIELD;
    }
    x |= (b2 & 0x7f) << 14;
    uint64_t b3 = p[3];
    if (b3 < 0x80) {
        v->u = x | b3 << 21;
        p += 4;
        v++;
        NEXT_FIELD;
    }
    x |= (b3 & 0x7f) << 21;
    uint64_t b4 = p[4];
    if (b4 < 0x80) {
        v->u = x | b4 << 28;
        p += 5;
        v++;
        NEXT_FIELD;
    }
    x |= (b4 & 0x7f) << 28;
    unsigned k = 5;
    for (; k < 9 && (p[k] & 0x80); k++) x |= (uint64_t)(p[k] & 0x7f) << (7 * k);
    if (k == 9 && p[9] > 1) goto stop; /* too long: the generic reader says so */
    v->u = x | (uint64_t)(p[k] & 0x7f) << (7 * k);
    p += k + 1;
    v++;
    NEXT_FIELD;
}
u8:
    set_header(v, D9_FT_U8, true, 0);
    v->u = *p++;
    v++;
    NEXT_FIELD;
boolean:
    set_header(v, D9_FT_BOOL, true, 0);
    v->u = *p++ != 0;
    v++;
    NEXT_FIELD;
u16:
    set_header(v, D9_FT_U16, true, 0);
    v->u = le16(p);
    p += 2;
    v++;
    NEXT_FIELD;
u32:
    set_header(v, D9_FT_U32, true, 0);
    v->u = le32(p);
    p += 4;
    v++;
    NEXT_FIELD;
i64:
    set_header(v, D9_FT_I64, true, 0);
    v->i = (int64_t)le64(p);
    p += 8;
    v++;
    NEXT_FIELD;
f64: {
    set_header(v, D9_FT_F64, true, 0);
    uint64_t bits = le64(p);
    memcpy(&v->f, &bits, sizeof bits);
    p += 8;
    v++;
    NEXT_FIELD;
}
pooled_string: {
    uint32_t id = le32(p);
    const d9_pool_entry *e = d9_pool_find(&d->strings, id);
    if (UNLIKELY(!e)) goto stop;
    set_header(v, D9_FT_POOLED_STRING, true, id);
    v->str.ptr = e->data;
    v->str.len = e->len;
    p += 4;
    v++;
    NEXT_FIELD;
}
pooled_stack: {
    uint32_t id = le32(p);
    const d9_pool_entry *e = d9_pool_find(&d->stacks, id);
    if (UNLIKELY(!e)) goto stop;
    set_header(v, D9_FT_POOLED_STACK, true, id);
    v->stack.addrs = e->data;
    v->stack.count = e->len;
    p += 4;
    v++;
    NEXT_FIELD;
}
event_end:
    ev++;
    base = next_base;
    frame = p;
    goto next_event;
stop:
#undef NEXT_FIELD
    *pp = frame;
    *ts_base = base;
    return (uint32_t)(ev - evs);
}

/* ---- frames ---- */

/* Inline in both instances of next_event: it is most of the reading loop. */
static inline __attribute__((always_inline)) int parse_event(cur *c, d9_event *ev) {
    d9_decoder *d = c->d;
    NEED(c, 2);
    uint16_t type_id = le16(c->p);
    d9_dec_schema *s = type_id < d->types_cap ? d->types[type_id] : NULL;
    if (UNLIKELY(!s)) return fail(c, c->p, "event of undefined type id %u", type_id);
    c->p += 2;
    uint64_t ts = 0;
    if (s->has_timestamp) {
        size_t left = (size_t)(c->end - c->p);
        if (UNLIKELY(left < 3)) return more(c, c->p, 3);
        ts = d->ts_base + (LIKELY(left >= 4) ? delta24(c->p) : le24(c->p));
        c->p += 3;
    }
    if (d->ev_arena_dirty) {
        d9_arena_reset(&d->ev_arena, true);
        d->ev_arena_dirty = false;
    }
    d9_value *vals = d->values;
    const d9_dec_field *f = s->fields;
    d->ev_unresolved = 0;
    d->ev_npending = 0;
    const uint8_t *wire = s->wire_types;
    for (uint32_t i = 0; i < s->field_count; i++) {
        uint8_t wt = wire[i];
        d9_value *v = &vals[i];
        /* the common small fields inline when their bytes are there; everything else, and
         * every error or shortage, through decode_value */
        const uint8_t *p = c->p;
        size_t left = (size_t)(c->end - p);
        v->type = wt;
        v->present = true;
        v->resolved = true;
        v->pool_id = 0;
        switch (wt) {
        case D9_FT_VARINT:
            if (LIKELY(left >= 1 && *p < 0x80)) {
                v->u = *p;
                c->p = p + 1;
                continue;
            }
            if (LIKELY(left >= 10)) { /* a longer one (times, ids) whose every byte is there */
                uint64_t x = 0;
                unsigned n = 0;
                for (; n < 9 && (p[n] & 0x80); n++) x |= (uint64_t)(p[n] & 0x7f) << (7 * n);
                if (n < 9 || p[9] <= 1) { /* else too long: decode_value says so */
                    v->u = x | (uint64_t)(p[n] & 0x7f) << (7 * n);
                    c->p = p + n + 1;
                    continue;
                }
            }
            break;
        case D9_FT_VARINT | D9_FT_OPTIONAL:
            if (LIKELY(left >= 1 && *p == 0)) { /* absent (a span's parent, mostly) */
                v->type = D9_FT_VARINT;
                v->present = false;
                memset(&v->list, 0, sizeof v->list);
                c->p = p + 1;
                continue;
            }
            break;
        case D9_FT_U8:
            if (LIKELY(left >= 1)) {
                v->u = *p;
                c->p = p + 1;
                continue;
            }
            break;
        case D9_FT_U32:
            if (LIKELY(left >= 4)) {
                v->u = le32(p);
                c->p = p + 4;
                continue;
            }
            break;
        case D9_FT_POOLED_STRING:
            if (LIKELY(left >= 4)) {
                uint32_t id = le32(p);
                const d9_pool_entry *e = d9_pool_find(&d->strings, id);
                if (LIKELY(e != NULL)) {
                    v->pool_id = id;
                    v->str.ptr = e->data;
                    v->str.len = e->len;
                    c->p = p + 4;
                    continue;
                }
            }
            break;
        default:
            break;
        }
        int r = decode_value(c, wt, v, 0);
        if (UNLIKELY(r != P_OK)) {
            if (r == P_ERR)
                snprintf(d->ctx, sizeof d->ctx, "%.64s field '%.64s' (%s)", s->name, f[i].name,
                         d9_field_type_name(f[i].type));
            return r;
        }
    }
    if (UNLIKELY(d->ev_unresolved)) {
        d->st.unresolved_refs += d->ev_unresolved;
        for (uint32_t i = 0; i < d->ev_npending && d9_u64_set_count(&d->pending) < PENDING_MAX; i++)
            (void)d9_u64_set_add(&d->pending, d->ev_pending[i]); /* untracked when out of memory */
    }
    if (s->has_timestamp) d->ts_base = ts;
    ev->schema = s;
    ev->values = vals;
    ev->ts_ns = ts;
    ev->offset = off_of(d, c->frame);
    ev->stream = (uint32_t)(d->st.streams - 1);
    ev->type_id = type_id;
    return P_OK;
}

/* Make room in the type id table for `type_id` (ids are usually small and dense). */
static bool grow_types(d9_decoder *d, uint16_t type_id) {
    uint32_t cap = d->types_cap ? d->types_cap : 64;
    while (cap <= type_id) cap *= 2;
    d9_dec_schema **t = realloc(d->types, cap * sizeof *t);
    if (!t) return false;
    memset(t + d->types_cap, 0, (cap - d->types_cap) * sizeof *t);
    d->types = t;
    d->types_cap = cap;
    return true;
}

static int parse_schema(cur *c) {
    d9_decoder *d = c->d;
    NEED(c, 4);
    uint16_t type_id = le16(c->p);
    const uint8_t *body = c->p + 2;
    uint16_t name_len = le16(c->p + 2);
    c->p += 4;
    NEED(c, (uint64_t)name_len + 3);
    const uint8_t *name = c->p;
    c->p += name_len + 1; /* name, has_timestamp */
    uint16_t nf = le16(c->p);
    c->p += 2;
    for (uint32_t i = 0; i < nf; i++) {
        NEED(c, 2);
        uint16_t fl = le16(c->p);
        NEED(c, 3 + (uint64_t)fl);
        uint8_t t = c->p[2 + fl];
        if (!valid_type(t))
            return fail(c, c->p + 2 + fl, "schema '%.*s' field '%.*s' has unknown type 0x%02x",
                        (int)(name_len > 64 ? 64 : name_len), (const char *)name,
                        (int)(fl > 64 ? 64 : fl), (const char *)c->p + 2, t);
        c->p += 3 + (size_t)fl;
    }
    /* commit */
    d9_dec_schema *s = d9_schema_intern(&d->reg, body, (size_t)(c->p - body), type_id);
    if (!s) return fail_limit(c, c->frame, "schema memory limit reached (%zu bytes)", d->opt.max_schema_bytes);
    if (type_id >= d->types_cap && !grow_types(d, type_id))
        return fail_limit(c, c->frame, "out of memory");
    d9_dec_schema *old = d->types[type_id];
    if (old && old != s)
        return fail(c, c->frame,
                    "type id %u registered again with a different schema ('%s', was '%s')",
                    type_id, s->name, old->name);
    if (!old) {
        if (d->ndefined == d->defined_cap) {
            uint32_t cap = d->defined_cap ? d->defined_cap * 2 : 32;
            uint16_t *def = realloc(d->defined, cap * sizeof *def);
            if (!def) return fail_limit(c, c->frame, "out of memory");
            d->defined = def;
            d->defined_cap = cap;
        }
        d->types[type_id] = s;
        d->defined[d->ndefined++] = type_id;
    }
    if (s->has_timestamp && s->bind.role == D9_SCH_CLOCK_SYNC) {
        d->clock_sync = s;
        d->clock_sync_real = s->bind.field[D9_KF_REALTIME_NS];
    }
    if (s->field_count > d->values_cap) {
        uint32_t cap = d->values_cap ? d->values_cap : 16;
        while (cap < s->field_count) cap *= 2;
        d9_value *v = realloc(d->values, (size_t)cap * sizeof *v);
        if (!v) return fail_limit(c, c->frame, "out of memory");
        d->values = v;
        d->values_cap = cap;
    }
    d->st.schema_frames++;
    return P_OK;
}

static void note_definition(d9_decoder *d, unsigned kind, uint32_t id) {
    if (d9_u64_set_has(&d->pending, (uint64_t)kind << 32 | id))
        d->st.late_definitions++;
}

static int parse_pool(cur *c, bool stacks) {
    d9_decoder *d = c->d;
    NEED(c, 4);
    uint32_t n = le32(c->p);
    c->p += 4;
    /* each entry: id and a u32 length at least */
    TOO_BIG(c, c->p - 4, 8 * (uint64_t)n, "pool size");
    NEED(c, 8 * (uint64_t)n);
    const uint8_t *first = c->p;
    for (uint32_t i = 0; i < n; i++) {
        NEED(c, 8);
        uint64_t body = stacks ? 8 * (uint64_t)le32(c->p + 4) : le32(c->p + 4);
        TOO_BIG(c, c->p + 4, body, "pool entry size");
        NEED(c, 8 + body);
        c->p += 8 + (size_t)body;
    }
    /* commit */
    uint64_t budget = d->opt.max_pool_bytes / POOL_ENTRY_COST;
    if (d->pool_entries + n > budget)
        return fail_limit(c, c->frame, "more pool entries in one stream than the memory limit allows");
    d->pool_entries += n;
    d9_pool *pool = stacks ? &d->stacks : &d->strings;
    const uint8_t *p = first;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = le32(p), len = le32(p + 4);
        const void *data;
        if (stacks) {
            uint64_t *a = d9_arena_alloc(&d->pool_arena, (size_t)len * 8, 8);
            if (a)
                for (uint32_t k = 0; k < len; k++) a[k] = le64(p + 8 + 8 * (size_t)k);
            data = a;
            p += 8 + 8 * (size_t)len;
        } else {
            data = d9_arena_strdup(&d->pool_arena, p + 8, len);
            p += 8 + (size_t)len;
        }
        if (!data) return fail_limit(c, c->frame, "pool memory limit reached (%zu bytes)", d->opt.max_pool_bytes);
        int r = d9_pool_put(pool, id, data, len);
        if (r < 0) return fail_limit(c, c->frame, "out of memory");
        if (r == 1) note_definition(d, stacks ? POOL_STACK : POOL_STRING, id);
    }
    if (stacks) {
        d->st.stack_pool_frames++;
        d->st.stack_pool_entries += n;
    } else {
        d->st.string_pool_frames++;
        d->st.string_pool_entries += n;
    }
    return P_OK;
}

static int parse_annotations(cur *c) {
    d9_decoder *d = c->d;
    uint64_t type_id = 0;
    int r = get_varint(c, &type_id);
    if (r != P_OK) return r;
    NEED(c, 2);
    uint16_t n = le16(c->p);
    c->p += 2;
    const uint8_t *first = c->p;
    for (uint32_t i = 0; i < n; i++) {
        NEED(c, 4);
        uint16_t kl = le16(c->p + 2);
        NEED(c, 8 + (uint64_t)kl);
        uint32_t vl = le32(c->p + 4 + kl);
        TOO_BIG(c, c->p + 4 + kl, vl, "annotation value length");
        NEED(c, 8 + (uint64_t)kl + vl);
        c->p += 8 + (size_t)kl + vl;
    }
    /* commit; annotations of an unknown type id or field are ignored, as the format allows */
    d9_dec_schema *s = type_id < d->types_cap ? d->types[type_id] : NULL;
    const uint8_t *p = first;
    for (uint32_t i = 0; s && i < n; i++) {
        uint16_t fi = le16(p), kl = le16(p + 2);
        uint32_t vl = le32(p + 4 + kl);
        if (fi < s->field_count &&
            !d9_schema_annotate(&d->reg, s, fi, p + 4, kl, p + 8 + kl, vl))
            return fail_limit(c, c->frame, "schema memory limit reached (%zu bytes)", d->opt.max_schema_bytes);
        p += 8 + (size_t)kl + vl;
    }
    d->st.annotation_frames++;
    return P_OK;
}

/* The stream's end: count pool ids that were referenced but never defined. */
static void end_stream(d9_decoder *d) {
    if (!d->in_stream) return;
    if (d->scan_mode.stream_end) d->scan_mode.stream_end(d, d->scan_mode.ctx);
    uint64_t k;
    for (size_t pos = 0; d9_u64_set_next(&d->pending, &pos, &k);) {
        const d9_pool *pool = (k >> 32) == POOL_STACK ? &d->stacks : &d->strings;
        if (!d9_pool_find(pool, (uint32_t)k)) d->st.undefined_pool_ids++;
    }
    if (d->pending.map.cap > PENDING_KEEP_SLOTS) d9_u64_set_free(&d->pending); /* a big stream pins no memory */
    else d9_u64_set_clear(&d->pending);
}

static void begin_stream(d9_decoder *d) {
    end_stream(d);
    if (d->scan_ids) memset(d->scan_ids, 0, d->scan_ids_cap * sizeof *d->scan_ids); /* ids are per stream */
    for (uint32_t i = 0; i < d->ndefined; i++) d->types[d->defined[i]] = NULL;
    d->ndefined = 0;
    d->ts_base = 0;
    d9_pool_clear(&d->strings);
    d9_pool_clear(&d->stacks);
    d9_arena_reset(&d->pool_arena, false);
    d->pool_entries = 0;
    d->in_stream = true;
    d->st.streams++;
}

static int parse_header(cur *c) {
    static const uint8_t magic[4] = {D9_MAGIC0, D9_MAGIC1, D9_MAGIC2, D9_MAGIC3};
    size_t avail = (size_t)(c->end - c->frame);
    size_t k = avail < 4 ? avail : 4;
    if (memcmp(c->frame, magic, k) != 0) {
        char hex[16] = "";
        for (size_t i = 0; i < k; i++) snprintf(hex + 3 * i, 4, "%02x ", c->frame[i]);
        hex[k ? 3 * k - 1 : 0] = '\0';
        if (c->d->in_stream)
            return fail(c, c->frame, "bad stream header (%s; expected 54 52 43 00)", hex);
        return fail(c, c->frame, "bad magic %s: not a dial9 trace (expected 54 52 43 00)", hex);
    }
    if (avail < D9_HEADER_SIZE) return more(c, c->frame, D9_HEADER_SIZE);
    if (c->frame[4] != D9_FORMAT_VERSION)
        return fail(c, c->frame + 4, "unsupported format version %u (this reader knows %u)",
                    c->frame[4], D9_FORMAT_VERSION);
    c->p = c->frame + D9_HEADER_SIZE;
    begin_stream(c->d);
    return P_OK;
}

/* ---- input ---- */

static void io_error(d9_decoder *d, const char *why) {
    stop(d, D9_DEC_ERROR, d->base + d->pos, "%s", why);
}

/* Read until `need` bytes from pos are buffered or the input ends. -1 on an error. */
static int refill(d9_decoder *d, uint64_t need) {
    if (!d->in) {
        d->eof = true;
        return 0;
    }
    if (d->pos > 0) {
        memmove(d->own, d->own + d->pos, d->len - d->pos);
        d->base += d->pos;
        d->len -= d->pos;
        d->pos = 0;
    }
    if (need > d->cap) {
        uint64_t cap = (uint64_t)d->cap * 2;
        if (cap < need) cap = need;
        uint64_t limit = (uint64_t)d->opt.max_frame_bytes + 16;
        if (cap > limit) cap = limit < need ? need : limit;
        uint8_t *nb = realloc(d->own, (size_t)cap);
        if (!nb) {
            io_error(d, "out of memory for the input buffer");
            return -1;
        }
        d->own = nb;
        d->cap = (size_t)cap;
    }
    d->buf = d->own;
    while (d->len < need && !d->eof) {
        long r = d9_input_read(d->in, d->own + d->len, d->cap - d->len);
        if (r < 0) {
            io_error(d, d->in->err);
            return -1;
        }
        if (r == 0) d->eof = true;
        d->len += (size_t)r;
    }
    d->st.input_bytes = d->in->raw_bytes;
    return 0;
}

static const char *codec_name(d9_input_codec c) { return c == D9_INPUT_ZSTD ? "zstd" : "gzip"; }

/* Room for an unwrap function's reason: a loader's (common/libz_loader.h) with dlerror()'s. */
#define D9_UNWRAP_ERR 320

/* Without a decompressor (libdial9): say what the data is. */
static int no_unwrap(d9_decoder *d, d9_input_codec c) {
    char why[96];
    snprintf(why, sizeof why, "%s-compressed data: this reader reads uncompressed traces only", codec_name(c));
    io_error(d, why);
    return -1;
}

static void note_codec(d9_decoder *d, d9_input_codec c) {
    d->codec = c;
    if (c == D9_INPUT_GZIP) d->st.gzip = true;
    else d->st.zstd = true;
}

/* Look at the first bytes once: compressed data gets a decompressor in front of the input. */
static int sniff(d9_decoder *d) {
    d->sniffed = true;
    if (!d->in) {
        d9_input_codec c = d9_input_codec_of(d->buf, d->len);
        if (c == D9_INPUT_PLAIN) return 0;
        if (!d->unwrap) return no_unwrap(d, c);
        char why[D9_UNWRAP_ERR] = "out of memory";
        d9_input *raw = d9_input_from_mem(d->buf, d->len);
        d->in = raw ? d->unwrap(c, raw, NULL, 0, why, sizeof why) : NULL;
        d->own = d->in ? malloc(d->opt.chunk_bytes) : NULL;
        if (!d->in || !d->own) {
            io_error(d, d->in ? "out of memory" : why);
            return -1;
        }
        d->cap = d->opt.chunk_bytes;
        d->buf = d->own;
        d->len = d->pos = 0;
        d->eof = false;
        note_codec(d, c);
        return 0;
    }
    if (refill(d, 4) < 0) return -1;
    d9_input_codec c = d9_input_codec_of(d->own, d->len);
    if (c != D9_INPUT_PLAIN) {
        if (!d->unwrap) return no_unwrap(d, c);
        char why[D9_UNWRAP_ERR] = "out of memory";
        d9_input *in = d->unwrap(c, d->in, d->own, d->len, why, sizeof why);
        d->in = in;
        if (!in) {
            io_error(d, why); /* the library cannot be loaded (its name and package), or no memory */
            return -1;
        }
        d->len = 0;
        d->eof = false;
        note_codec(d, c);
    }
    return 0;
}

/* ---- damage: skipped to the next stream header ---- */

static const uint8_t k_header[D9_HEADER_SIZE] = {D9_MAGIC0, D9_MAGIC1, D9_MAGIC2, D9_MAGIC3,
                                                  D9_FORMAT_VERSION};

/* Index in buf of the first stream header in buf[from, len), or len when there is none. */
static size_t find_header(const d9_decoder *d, size_t from) {
    if (from >= d->len) return d->len;
    const uint8_t *h = memmem(d->buf + from, d->len - from, k_header, sizeof k_header);
    return h ? (size_t)(h - d->buf) : d->len;
}

/* The frame at buf[at] is damaged (`why`): note it, end its stream and go on from the next
 * stream header after it, reading on to find one, or from the end of the data. Every intact
 * stream after damage is still read. -1 on an I/O error. */
static int skip_damage(d9_decoder *d, size_t at, const char *why) {
    uint64_t off = d->base + at;
    if (d->opt.stop_at_damage) {
        stop(d, D9_DEC_ERROR, off, "%s", why);
        return -1;
    }
    bool first = d->st.damaged_regions++ == 0;
    if (first) {
        char where[48];
        stream_label(d, where, sizeof where);
        snprintf(d->damage, sizeof d->damage, "damaged at offset %" PRIu64 " (%s): %.200s", off, where, why);
        d->st.first_damage_offset = off;
    }
    end_stream(d);
    d->in_stream = false;
    size_t from = at + 1;
    for (;;) {
        size_t h = find_header(d, from);
        if (h < d->len || d->eof) {
            d->pos = h;
            break;
        }
        /* a header may straddle two reads: keep the bytes that could start one */
        size_t keep = d->len - from < D9_HEADER_SIZE - 1 ? d->len - from : D9_HEADER_SIZE - 1;
        d->pos = d->len - keep;
        if (refill(d, keep + 1) < 0) return -1;
        from = d->pos;
    }
    uint64_t to = d->base + d->pos;
    d->st.damaged_bytes += to - off;
    d->st.bytes = to;
    if (first) {
        size_t n = strlen(d->damage);
        if (d->pos < d->len)
            snprintf(d->damage + n, sizeof d->damage - n,
                     "; skipped %" PRIu64 " bytes to the next stream header at offset %" PRIu64, to - off, to);
        else
            snprintf(d->damage + n, sizeof d->damage - n,
                     "; skipped %" PRIu64 " bytes to the end of the data (no stream header after it)", to - off);
    }
    return 0;
}

/* The end of data that held damage: D9_DEC_DAMAGED at `off` (a torn final frame's start, or
 * the end), the first damage's description, then `tail` (how it ended, may be ""). */
static void end_damaged(d9_decoder *d, uint64_t off, const char *tail) {
    int n = snprintf(d->msg, sizeof d->msg, "%s", d->damage);
    if (n >= 0 && (size_t)n < sizeof d->msg && d->st.damaged_regions > 1)
        n += snprintf(d->msg + n, sizeof d->msg - (size_t)n,
                      "; %" PRIu64 " damaged regions in all, %" PRIu64 " bytes skipped",
                      d->st.damaged_regions, d->st.damaged_bytes);
    if (n >= 0 && (size_t)n < sizeof d->msg && tail[0])
        snprintf(d->msg + n, sizeof d->msg - (size_t)n, "; %s", tail);
    escape_message(d);
    d->status = D9_DEC_DAMAGED;
    d->stop_off = off;
}

/* ---- the pull loop ---- */

static int finish(d9_decoder *d) {
    end_stream(d);
    d->st.bytes = d->base + d->pos;
    if (d->in) d->st.input_bytes = d->in->raw_bytes;
    bool early = d->in && d->in->incomplete;
    if (d->st.damaged_regions) {
        char tail[64] = "";
        if (early) snprintf(tail, sizeof tail, "then the %s data ends early", codec_name(d->codec));
        end_damaged(d, d->base + d->pos, tail);
        return -1;
    }
    if (early)
        stop(d, D9_DEC_TRUNCATED, d->base + d->pos, "the %s data ends early", codec_name(d->codec));
    else {
        d->status = D9_DEC_END;
        d->stop_off = d->base + d->pos;
        d->msg[0] = '\0';
    }
    return 0;
}

static uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* A clock sync widens the plausible range, unless it is itself implausible: outside the range
 * and with monotonic and wall-clock times that moved apart since the first one. */
static bool clock_sync_plausible(d9_decoder *d, const d9_event *ev, uint64_t real) {
    d9_dec_stats *st = &d->st;
    if (st->clock_sync_first_ns == 0 && st->clock_sync_last_ns == 0) return true;
    if (ev->ts_ns >= d->time_lo && ev->ts_ns <= d->time_hi) return true;
    if (d->clock_sync_real < 0) return false;
    __int128 apart = ((__int128)ev->ts_ns - st->clock_sync_first_ns) - ((__int128)real - d->sync_first_real);
    return (apart < 0 ? -apart : apart) <= (__int128)D9_DEC_TIME_SLACK_NS;
}

/* Slow path of the time check: a clock sync, or a timestamp outside the plausible range. */
static void check_time(d9_decoder *d, d9_event *ev) {
    d9_dec_stats *st = &d->st;
    if (ev->schema == d->clock_sync && ev->ts_ns != 0) {
        uint64_t real = 0;
        if (d->clock_sync_real >= 0) d9_value_uint(&ev->values[d->clock_sync_real], &real);
        if (clock_sync_plausible(d, ev, real)) {
            if (st->clock_sync_first_ns == 0 && st->clock_sync_last_ns == 0) {
                st->clock_sync_first_ns = st->clock_sync_last_ns = ev->ts_ns;
                d->sync_first_real = real;
            }
            if (ev->ts_ns < st->clock_sync_first_ns) st->clock_sync_first_ns = ev->ts_ns;
            if (ev->ts_ns > st->clock_sync_last_ns) st->clock_sync_last_ns = ev->ts_ns;
            d->time_lo = sat_sub(st->clock_sync_first_ns, D9_DEC_TIME_SLACK_NS);
            d->time_hi = sat_add(st->clock_sync_last_ns, D9_DEC_TIME_SLACK_NS);
            return;
        }
    } else if (ev->ts_ns == 0 || (ev->ts_ns >= d->time_lo && ev->ts_ns <= d->time_hi)) {
        return;
    }
    ev->implausible_ts = true;
    if (st->implausible_times++ == 0) {
        st->first_implausible_ts = ev->ts_ns;
        st->first_implausible_offset = ev->offset;
    }
}

/* ---- scan mode ---- */

enum { SCAN_UNKNOWN, SCAN_KEEP, SCAN_PARSE, SCAN_PLAN }; /* PARSE, PLAN: the reader declines */

/* What scan mode does with events of schema s (asked once per schema). */
static uint8_t scan_state(d9_decoder *d, const d9_dec_schema *s) {
    if (s->index >= d->scan_cap) {
        uint32_t cap = d->scan_cap ? d->scan_cap : 64;
        while (cap <= s->index) cap *= 2;
        uint8_t *st = realloc(d->scan, cap);
        if (!st) return SCAN_KEEP; /* out of memory: decode it, as without scan mode */
        d->scan = st;
        memset(d->scan + d->scan_cap, SCAN_UNKNOWN, cap - d->scan_cap);
        d9_skip_plan *pl = realloc(d->plans, cap * sizeof *pl);
        if (!pl) return SCAN_KEEP; /* the larger state table stays: harmless */
        d->plans = pl;
        memset(d->plans + d->scan_cap, 0, (cap - d->scan_cap) * sizeof *pl);
        d->scan_cap = cap;
    }
    uint8_t *st = &d->scan[s->index];
    if (*st != SCAN_UNKNOWN) return *st;
    if (d->scan_mode.keep(s, d->scan_mode.ctx)) return *st = SCAN_KEEP;
    *st = SCAN_PARSE;
    uint8_t types[256];
    if (!d->scan_mode.skip_plans || s->field_count > sizeof types) return *st;
    for (uint16_t i = 0; i < s->field_count; i++)
        types[i] = (uint8_t)(s->fields[i].type | (s->fields[i].optional ? D9_FT_OPTIONAL : 0));
    if (d9_skip_plan_build(&d->plans[s->index], s->has_timestamp, types, s->field_count)) {
        *st = SCAN_PLAN;
        if (3 + d->plans[s->index].max_size > d->scan_room) d->scan_room = 3 + d->plans[s->index].max_size;
    }
    return *st;
}

/* What scan_run does with type id `id` of this stream: see d9_decoder.scan_ids. */
static uintptr_t scan_id_slow(d9_decoder *d, uint16_t id) {
    const d9_dec_schema *s = id < d->types_cap ? d->types[id] : NULL;
    if (!s) return 1; /* undefined: parse_event reports it (not cached: it may come) */
    /* the ops are allocated (aligned): their low bit is free for has_timestamp */
    uintptr_t v = scan_state(d, s) == SCAN_PLAN
                      ? (uintptr_t)d->plans[s->index].ops | (uintptr_t)s->has_timestamp
                      : 1;
    if (id >= d->scan_ids_cap) {
        uint32_t cap = d->scan_ids_cap ? d->scan_ids_cap : 64;
        while (cap <= id) cap *= 2;
        uintptr_t *a = realloc(d->scan_ids, cap * sizeof *a);
        if (!a) return v;
        memset(a + d->scan_ids_cap, 0, (cap - d->scan_ids_cap) * sizeof *a);
        d->scan_ids = a;
        d->scan_ids_cap = cap;
    }
    return d->scan_ids[id] = v;
}

/* Step over the run of events at d->pos that the reader declines and their plans allow (the
 * bulk of a segment), with the state in locals. Only while the largest event of the plan is
 * buffered, so that neither the frame header nor the fields need bounds checks; anything
 * else, a malformed event among it, is left to parse_event to read and judge. */

static void scan_run(d9_decoder *d) {
    const uint8_t *p = d->buf + d->pos, *end = d->buf + d->len;
    if ((size_t)(end - p) < d->scan_room) return;
    /* in locals: the plans' byte reads may alias anything, the compiler would reload them */
    const uintptr_t *ids = d->scan_ids;
    uint32_t nids = d->scan_ids_cap;
    const uint8_t *last = end - d->scan_room; /* the last event start with room after it */
    uint64_t ts = d->ts_base, n = 0;
    while (p <= last && *p == D9_FRAME_EVENT) {
        uint16_t id = le16(p + 1);
        uintptr_t v = id < nids ? ids[id] : 0;
        if (UNLIKELY(v <= 1)) {
            if (v == 1) break;
            v = scan_id_slow(d, id);
            ids = d->scan_ids;
            nids = d->scan_ids_cap;
            if (v == 1 || (size_t)(end - p) < d->scan_room) break;
            last = end - d->scan_room;
        }
        uint32_t delta = delta24(p + 3) & -(uint32_t)(v & 1); /* 0 without a timestamp */
        const uint8_t *next = d9_skip_ops((const d9_skip_op *)(v & ~(uintptr_t)1), p + 3);
        if (!next) break;
        ts += delta;
        p = next;
        n++;
    }
    if (n) {
        d->ts_base = ts;
        d->pos = (size_t)(p - d->buf);
        d->st.events += n;
        d->st.bytes = d->base + d->pos;
    }
}

void d9_dec_set_scan(d9_decoder *d, const d9_dec_scan *scan) {
    d->scan_mode = *scan;
    d->scan_room = 8; /* tag, type id, and the 4 bytes delta24 loads at most */
}

/* The position and counts as if the run's events handed out so far had been read alone; the
 * run ends once all are. */
static void sync_run(d9_decoder *d) {
    if (!d->run_count) return;
    uint64_t end = d->run_next < d->run_count ? d->run_evs[d->run_next].offset : d->run_end;
    d->pos = (size_t)(end - d->base);
    d->st.events = d->run_events0 + d->run_next;
    d->st.bytes = end;
    if (d->run_next == d->run_count) d->run_next = d->run_count = 0;
}

/* Read ahead the run of events at the position (outside scan mode) and hand out its first:
 * 0 when the next frame is not one that a run reads. */
static inline int start_run(d9_decoder *d, d9_event *ev) {
    const uint8_t *p = d->buf + d->pos;
    uint32_t n = read_run(d, &p, d->buf + d->len, &d->ts_base, d->run_evs, RUN_AHEAD, d->run_vals, RUN_AHEAD_VALUES);
    if (!n) return 0;
    d->run_next = 1;
    d->run_count = n;
    d->run_end = d->base + (uint64_t)(p - d->buf);
    d->run_events0 = d->st.events;
    *ev = d->run_evs[0];
    return 1;
}

/* The reading loop, written once and compiled twice (see d9_dec_next): with `scan` a
 * constant, the plain reader carries none of scan mode's checks. */
static inline __attribute__((always_inline)) int next_event(d9_decoder *d, d9_event *ev,
                                                             const bool scan) {
    for (;;) {
        if (scan && d->in_stream) scan_run(d);
        size_t avail = d->len - d->pos;
        if (UNLIKELY(avail == 0)) {
            if (d->eof) return finish(d);
            if (refill(d, 1) < 0) return -1;
            continue;
        }
        cur c = {.p = d->buf + d->pos, .end = d->buf + d->len, .frame = d->buf + d->pos, .d = d};
        uint8_t tag = *c.p++;
        int r;
        if (LIKELY(tag == D9_FRAME_EVENT && d->in_stream)) {
            /* a bounded event, read as a run of one: no read-ahead here, where d9_dec_next_run's
             * caller comes for the event its run stopped at */
            const uint8_t *p = c.frame;
            if (read_run(d, &p, c.end, &d->ts_base, ev, 1, d->values, d->values_cap) == 1) {
                c.p = p;
                r = P_OK;
            } else {
                r = parse_event(&c, ev);
            }
            if (scan && r == P_OK && scan_state(d, ev->schema) != SCAN_KEEP) {
                d->pos = (size_t)(c.p - d->buf);
                d->st.events++;
                d->st.bytes = d->base + d->pos;
                continue;
            }
            if (LIKELY(r == P_OK)) {
                ev->implausible_ts = false;
                if (UNLIKELY(ev->schema == d->clock_sync) ||
                    UNLIKELY(ev->ts_ns != 0 && (ev->ts_ns < d->time_lo || ev->ts_ns > d->time_hi)))
                    check_time(d, ev);
                d->pos = (size_t)(c.p - d->buf);
                d->st.events++;
                d->st.bytes = d->base + d->pos;
                return 1;
            }
        } else if (!d->in_stream || tag == D9_MAGIC0) {
            r = parse_header(&c);
        } else {
            switch (tag) {
            case D9_FRAME_SCHEMA: r = parse_schema(&c); break;
            case D9_FRAME_STRING_POOL: r = parse_pool(&c, false); break;
            case D9_FRAME_STACK_POOL: r = parse_pool(&c, true); break;
            case D9_FRAME_TIMESTAMP_RESET:
                if (avail < 9) {
                    r = more(&c, c.frame, 9);
                    break;
                }
                d->ts_base = le64(c.p);
                c.p += 8;
                d->st.timestamp_resets++;
                r = P_OK;
                break;
            case D9_FRAME_ANNOTATIONS: r = parse_annotations(&c); break;
            default:
                r = fail(&c, c.frame,
                         "unknown frame tag 0x%02x (frames carry no length: cannot go on)", tag);
                break;
            }
        }
        if (r == P_OK) {
            d->pos = (size_t)(c.p - d->buf);
            d->st.bytes = d->base + d->pos;
            continue;
        }
        if (r == P_ERR) {
            if (d->fatal || d->st.streams == 0) { /* a limit of ours, or not a dial9 trace */
                compose_error(d, c.frame);
                return -1;
            }
            char why[sizeof d->why + sizeof d->ctx + 80];
            describe_failure(d, c.frame, why, sizeof why);
            if (skip_damage(d, (size_t)(c.frame - d->buf), why) < 0) return -1;
            continue;
        }
        /* P_MORE: the frame goes past the buffered bytes */
        uint64_t need = c.need > avail ? c.need : (uint64_t)avail + 1;
        uint64_t off = off_of(d, c.frame);
        size_t limit = d->opt.max_frame_bytes < D9_DEC_WRITER_FRAME_MAX ? d->opt.max_frame_bytes
                                                                        : D9_DEC_WRITER_FRAME_MAX;
        if (need > limit) {
            char why[160];
            snprintf(why, sizeof why, "%s frame needs %" PRIu64 " bytes, more than %s %zu (a corrupt length)",
                     frame_name(tag), need,
                     limit == D9_DEC_WRITER_FRAME_MAX ? "any writer writes," : "the limit of", limit);
            if (d->st.streams == 0) {
                stop(d, D9_DEC_ERROR, off, "%s", why);
                return -1;
            }
            if (skip_damage(d, (size_t)(c.frame - d->buf), why) < 0) return -1;
            continue;
        }
        if (d->eof) {
            /* A torn tail is the last frame of the last stream: a stream header after the
             * frame's start says this frame was damaged, and the streams after it intact. */
            size_t at = (size_t)(c.frame - d->buf);
            size_t h = find_header(d, at + 1);
            if (h < d->len && d->st.streams > 0) {
                char why[200];
                snprintf(why, sizeof why,
                         "incomplete %s frame (%zu bytes until the stream header at offset %" PRIu64
                         ", at least %" PRIu64 " needed)",
                         frame_name(tag), h - at, d->base + h, need);
                if (skip_damage(d, at, why) < 0) return -1;
                continue;
            }
            end_stream(d);
            if (d->in) d->st.input_bytes = d->in->raw_bytes;
            d->st.torn_tail = true;
            if (d->st.damaged_regions) {
                char tail[200], where[48];
                stream_label(d, where, sizeof where);
                snprintf(tail, sizeof tail,
                         "then truncated at offset %" PRIu64 " (%s): incomplete %s frame (%zu bytes present, at least %" PRIu64 " needed)",
                         off, where, frame_name(tag), avail, need);
                end_damaged(d, off, tail);
                return -1;
            }
            stop(d, D9_DEC_TRUNCATED, off,
                 "incomplete %s frame (%zu bytes present, at least %" PRIu64 " needed)",
                 frame_name(tag), avail, need);
            return 0;
        }
        if (refill(d, need) < 0) return -1;
    }
}

static __attribute__((noinline)) int next_event_scanning(d9_decoder *d, d9_event *ev) {
    return next_event(d, ev, true);
}

/* Everything but handing out a run's next event: its own function, so that d9_dec_next's
 * common case saves no registers. */
static __attribute__((noinline)) int next_event_slow(d9_decoder *d, d9_event *ev) {
    sync_run(d);
    /* most events: bounded, read ahead as a run, without the frame loop (in_stream implies
     * sniffed) */
    if (LIKELY(d->status == D9_DEC_RUNNING) && LIKELY(d->in_stream) && LIKELY(d->scan_mode.keep == NULL) &&
        LIKELY(start_run(d, ev)))
        return 1;
    if (UNLIKELY(d->status != D9_DEC_RUNNING))
        return d->status == D9_DEC_ERROR || d->status == D9_DEC_DAMAGED ? -1 : 0;
    if (UNLIKELY(!d->sniffed) && sniff(d) < 0) return -1;
    if (UNLIKELY(d->scan_mode.keep != NULL)) return next_event_scanning(d, ev);
    return next_event(d, ev, false);
}

int d9_dec_next(d9_decoder *d, d9_event *ev) {
    if (LIKELY(d->run_next < d->run_count)) {
        *ev = d->run_evs[d->run_next++];
        return 1;
    }
    return next_event_slow(d, ev);
}

/* A run for the caller: read_run, then the decoder's state once for all its events. */
int d9_dec_next_run(d9_decoder *d, d9_event *evs, uint32_t max_events, d9_value *vals, uint32_t max_values) {
    sync_run(d);
    if (d->status != D9_DEC_RUNNING || !d->in_stream || d->scan_mode.keep != NULL || d->run_count)
        return 0; /* the events d9_dec_next read ahead are its own to hand out */
    const uint8_t *p = d->buf + d->pos;
    uint32_t n = read_run(d, &p, d->buf + d->len, &d->ts_base, evs, max_events, vals, max_values);
    if (n) {
        d->pos = (size_t)(p - d->buf);
        d->st.events += n;
        d->st.bytes = d->base + d->pos;
    }
    return (int)n;
}

/* ---- opening and closing ---- */

void d9_dec_options_init(d9_dec_options *opt) {
    opt->chunk_bytes = 256 * 1024;
    opt->max_frame_bytes = 64u << 20;
    opt->max_pool_bytes = (size_t)1 << 30;
    opt->max_schema_bytes = 64u << 20;
    opt->stop_at_damage = false;
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
    if (err && errlen) snprintf(err, errlen, fmt, a, b);
}

static d9_decoder *dec_new(const d9_dec_options *opt) {
    d9_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d9_dec_options_init(&d->opt);
    if (opt) {
        if (opt->chunk_bytes) d->opt.chunk_bytes = opt->chunk_bytes;
        if (opt->max_frame_bytes) d->opt.max_frame_bytes = opt->max_frame_bytes;
        if (opt->max_pool_bytes) d->opt.max_pool_bytes = opt->max_pool_bytes;
        if (opt->max_schema_bytes) d->opt.max_schema_bytes = opt->max_schema_bytes;
        d->opt.stop_at_damage = opt->stop_at_damage;
    }
    if (d->opt.chunk_bytes < 16) d->opt.chunk_bytes = 16;
    d9_arena_init(&d->pool_arena, 1024 * 1024, d->opt.max_pool_bytes);
    size_t ev_limit = d->opt.max_frame_bytes * 4;
    if (ev_limit < ((size_t)256 << 20)) ev_limit = (size_t)256 << 20;
    d9_arena_init(&d->ev_arena, 1024 * 1024, ev_limit);
    d9_pool_init(&d->strings);
    d9_pool_init(&d->stacks);
    d9_schema_reg_init(&d->reg, d->opt.max_schema_bytes);
    d->clock_sync_real = -1;
    d->time_hi = UINT64_MAX; /* no clock sync yet: every time is plausible */
    d->values_cap = 16;
    d->values = calloc(d->values_cap, sizeof *d->values);
    d->run_evs = malloc(RUN_AHEAD * sizeof *d->run_evs);
    d->run_vals = malloc(RUN_AHEAD_VALUES * sizeof *d->run_vals);
    if (!d->values || !d->run_evs || !d->run_vals) {
        free(d->values);
        free(d->run_evs);
        free(d->run_vals);
        free(d);
        return NULL;
    }
    return d;
}

d9_decoder *d9_dec_with_input(d9_input *in, d9_unwrap_fn unwrap, const d9_dec_options *opt,
                              char *err, size_t errlen) {
    d9_decoder *d = in ? dec_new(opt) : NULL;
    if (d) {
        d->in = in;
        d->unwrap = unwrap;
        d->own = malloc(d->opt.chunk_bytes);
    }
    if (!d || !d->own) {
        if (d) d9_dec_close(d);
        else d9_input_close(in);
        set_err(err, errlen, "%s%s", "out of memory", "");
        return NULL;
    }
    d->buf = d->own;
    d->cap = d->opt.chunk_bytes;
    return d;
}

d9_decoder *d9_dec_with_mem(const void *data, size_t len, d9_unwrap_fn unwrap,
                            const d9_dec_options *opt, char *err, size_t errlen) {
    d9_decoder *d = dec_new(opt);
    if (!d) {
        set_err(err, errlen, "%s%s", "out of memory", "");
        return NULL;
    }
    d->unwrap = unwrap;
    d->buf = len ? data : k_empty;
    d->len = len;
    d->eof = true;
    d->st.input_bytes = len;
    return d;
}

d9_decoder *d9_dec_open_plain_mem(const void *data, size_t len, const d9_dec_options *opt,
                                  char *err, size_t errlen) {
    return d9_dec_with_mem(data, len, NULL, opt, err, errlen);
}

void d9_dec_close(d9_decoder *d) {
    if (!d) return;
    d9_input_close(d->in);
    free(d->own);
    free(d->types);
    free(d->defined);
    free(d->values);
    free(d->run_evs);
    free(d->run_vals);
    d9_arena_free(&d->pool_arena);
    d9_arena_free(&d->ev_arena);
    d9_pool_free(&d->strings);
    d9_pool_free(&d->stacks);
    d9_u64_set_free(&d->pending);
    d9_schema_reg_free(&d->reg);
    for (uint32_t i = 0; i < d->scan_cap; i++)
        if (d->scan[i] == SCAN_PLAN) d9_skip_plan_free(&d->plans[i]);
    free(d->scan);
    free(d->plans);
    free(d->scan_ids);
    free(d);
}

/* ---- queries ---- */

d9_dec_status d9_dec_state(const d9_decoder *d) { return d->status; }
const char *d9_dec_message(const d9_decoder *d) { return d->msg; }
/* The two below bring the position and counts up to the events handed out (sync_run): the
 * decoder's own state, so the const of their argument is cast away. */
uint64_t d9_dec_stop_offset(const d9_decoder *d) {
    sync_run((d9_decoder *)d);
    return d->status == D9_DEC_RUNNING ? d->base + d->pos : d->stop_off;
}
const d9_dec_stats *d9_dec_get_stats(const d9_decoder *d) {
    sync_run((d9_decoder *)d);
    return &d->st;
}
uint32_t d9_dec_schema_count(const d9_decoder *d) { return d->reg.count; }
d9_dec_schema *d9_dec_schema_at(const d9_decoder *d, uint32_t index) {
    return index < d->reg.count ? (d9_dec_schema *)d->reg.all[index] : NULL;
}

bool d9_dec_pool_string(const d9_decoder *d, uint32_t pool_id, d9_dec_str *out) {
    const d9_pool_entry *e = d9_pool_find(&d->strings, pool_id);
    if (!e) return false;
    out->ptr = e->data;
    out->len = e->len;
    return true;
}

bool d9_dec_pool_stack(const d9_decoder *d, uint32_t pool_id, const uint64_t **addrs,
                       uint32_t *count) {
    const d9_pool_entry *e = d9_pool_find(&d->stacks, pool_id);
    if (!e) return false;
    *addrs = e->data;
    *count = e->len;
    return true;
}
