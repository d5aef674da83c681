/* Perfetto protobuf trace (TrackEvent), written with the hand-made protobuf writer.
 *
 * Layout: a ClockSnapshot (MONOTONIC = BOOTTIME at the window start, REALTIME when the trace
 * has a ClockSyncEvent; MONOTONIC is the primary trace clock), then one TrackDescriptor each
 * for the process, one thread track per worker, the counter tracks and a track for wakes that
 * come from outside the workers; then the interned data (names, categories, argument names,
 * function names, mappings, frames, call stacks); then every event in time order: poll and
 * park slices (BEGIN/END), wake instants with a flow to the poll they caused, counter values,
 * and PerfSample packets for the stack samples. Timestamps are CLOCK_MONOTONIC ns
 * (timestamp_clock_id 3). All packets are on one sequence (trusted_packet_sequence_id 1).
 * Field numbers are those of perfetto's protos/perfetto/trace (see docs/export.md). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/protobuf.h"

/* ---- field numbers ---------------------------------------------------------------------- */
enum {
    TRACE_PACKET = 1, /* Trace.packet */
    /* TracePacket */
    TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQUENCE_ID = 10, TP_TRACK_EVENT = 11,
    TP_INTERNED_DATA = 12, TP_SEQUENCE_FLAGS = 13, TP_TIMESTAMP_CLOCK_ID = 58,
    TP_TRACK_DESCRIPTOR = 60, TP_PERF_SAMPLE = 66,
    /* ClockSnapshot */
    CS_CLOCKS = 1, CS_PRIMARY_TRACE_CLOCK = 2, CLK_ID = 1, CLK_TIMESTAMP = 2,
    /* TrackDescriptor */
    TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT_UUID = 5, TD_COUNTER = 8,
    PD_PID = 1, PD_PROCESS_NAME = 6,
    THD_PID = 1, THD_TID = 2, THD_THREAD_NAME = 5,
    CD_UNIT = 3,
    /* TrackEvent */
    TE_CATEGORY_IIDS = 3, TE_DEBUG_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10,
    TE_TRACK_UUID = 11, TE_COUNTER_VALUE = 30, TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48,
    DA_NAME_IID = 1, DA_UINT_VALUE = 3, DA_STRING_VALUE = 6,
    /* InternedData */
    ID_EVENT_CATEGORIES = 1, ID_EVENT_NAMES = 2, ID_DEBUG_ANNOTATION_NAMES = 3,
    ID_FUNCTION_NAMES = 5, ID_FRAMES = 6, ID_CALLSTACKS = 7, ID_BUILD_IDS = 16,
    ID_MAPPING_PATHS = 17, ID_MAPPINGS = 19,
    IID = 1, INTERNED_NAME = 2, /* EventName / EventCategory / DebugAnnotationName / InternedString */
    FR_FUNCTION_NAME_ID = 2, FR_MAPPING_ID = 3, FR_REL_PC = 4,
    CSK_FRAME_IDS = 2,
    MP_BUILD_ID = 2, MP_START_OFFSET = 3, MP_START = 4, MP_END = 5, MP_PATH_STRING_IDS = 7,
    MP_EXACT_OFFSET = 8,
    /* PerfSample */
    PS_CPU = 1, PS_PID = 2, PS_TID = 3, PS_CALLSTACK_IID = 4, PS_CPU_MODE = 5,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { CLOCK_REALTIME = 1, CLOCK_MONOTONIC = 3, CLOCK_BOOTTIME = 6 };
enum { UNIT_TIME_NS = 1, UNIT_COUNT = 2 };
enum { MODE_KERNEL = 1, MODE_USER = 2 };

#define SEQUENCE_ID 1u
#define FLUSH_BYTES (1u << 20)
#define INTERNED_CHUNK (256u << 10)

/* ---- track uuids -------------------------------------------------------------------------- */
#define UUID_PROCESS 1ull
#define UUID_OUTSIDE_WAKES 2ull
static uint64_t uuid_worker(uint32_t w) { return 0x100000000ull + w; }
static uint64_t uuid_local_queue(uint32_t w) { return 0x200000000ull + w; }
static uint64_t uuid_sched_delay(uint32_t w) { return 0x300000000ull + w; }
#define UUID_GLOBAL_QUEUE 0x400000000ull
/* spans: a track per name, a child track per lane (spans of the name that overlap) */
static uint64_t uuid_span_name(uint32_t k) { return 0x500000000ull + k; }
static uint64_t uuid_span_lane(uint32_t k, uint32_t lane) {
    return 0x1000000000000ull + ((uint64_t)k << 24) + lane;
}

/* ---- writer state ---------------------------------------------------------------------- */
typedef struct pf {
    const d9_xmodel *m;
    FILE *out;
    d9_buf pkt;    /* the packet being built */
    d9_buf file;   /* packets waiting to be written */
    bool io_error;
    /* synthetic frame and mapping ids after the model's */
    uint64_t offcpu_frame_iid, unknown_mapping_iid;
    uint32_t pid;
} pf;

/* Strings of the model have iid = string index + 1; the writer's own names come after them. */
static uint64_t iid_of(uint32_t string_index) { return (uint64_t)string_index + 1; }

enum fixed_name {
    N_POLL, N_PARK, N_WAKE, N_TASK_ID, N_LOCAL_QUEUE, N_SCHED_WAIT, N_CPU_NS, N_WAKER, N_WOKEN,
    N_WOKEN_LOC, N_OFFCPU_ROOT, N_UNKNOWN_MAPPING,
    N_SPAN, N_SPAN_ID, N_SPAN_POLL, N_SPAN_QUEUED, N_SPAN_WAIT, N_SPAN_UNKNOWN, N_SPAN_UNENDED,
    N_FIXED_COUNT,
};
static const char *const fixed_names[N_FIXED_COUNT] = {
    [N_POLL] = "poll", [N_PARK] = "park", [N_WAKE] = "wake", [N_TASK_ID] = "task_id",
    [N_LOCAL_QUEUE] = "local_queue", [N_SCHED_WAIT] = "sched_wait_ns", [N_CPU_NS] = "cpu_time_ns",
    [N_WAKER] = "waker_task_id", [N_WOKEN] = "woken_task_id",
    [N_WOKEN_LOC] = "woken_task_location", [N_OFFCPU_ROOT] = "[off-cpu: context switch]",
    [N_UNKNOWN_MAPPING] = "[unknown]",
    [N_SPAN] = "span", [N_SPAN_ID] = "span_id", [N_SPAN_POLL] = "poll_ns",
    [N_SPAN_QUEUED] = "queued_ns", [N_SPAN_WAIT] = "wait_ns", [N_SPAN_UNKNOWN] = "unknown_ns",
    [N_SPAN_UNENDED] = "unended",
};
static uint64_t fixed_iid(const pf *p, enum fixed_name n) {
    return (uint64_t)p->m->strings.count + 1 + n;
}

static void flush_file(pf *p) {
    if (p->file.len && fwrite(p->file.data, 1, p->file.len, p->out) != p->file.len)
        p->io_error = true;
    d9_buf_clear(&p->file);
}

/* Append the packet being built to the output as Trace.packet. */
static void end_packet(pf *p) {
    d9_pb_bytes(&p->file, TRACE_PACKET, p->pkt.data, p->pkt.len);
    d9_buf_clear(&p->pkt);
    if (p->file.len >= FLUSH_BYTES) flush_file(p);
}

static void begin_timed_packet(pf *p, uint64_t ts, unsigned flags) {
    d9_pb_uint(&p->pkt, TP_TIMESTAMP, ts);
    d9_pb_uint(&p->pkt, TP_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC);
    d9_pb_uint(&p->pkt, TP_SEQUENCE_ID, SEQUENCE_ID);
    if (flags) d9_pb_uint(&p->pkt, TP_SEQUENCE_FLAGS, flags);
}

/* ---- header: clocks and tracks --------------------------------------------------------- */

static void clock(d9_buf *b, uint32_t id, uint64_t ts) {
    size_t c = d9_pb_begin(b, CS_CLOCKS);
    d9_pb_uint(b, CLK_ID, id);
    d9_pb_uint(b, CLK_TIMESTAMP, ts);
    d9_pb_end(b, c);
}

static void write_clock_snapshot(pf *p) {
    const d9_xmodel *m = p->m;
    size_t cs = d9_pb_begin(&p->pkt, TP_CLOCK_SNAPSHOT);
    clock(&p->pkt, CLOCK_MONOTONIC, m->from);
    clock(&p->pkt, CLOCK_BOOTTIME, m->from); /* no suspend in a trace: the two agree */
    if (m->have_realtime) clock(&p->pkt, CLOCK_REALTIME, m->realtime_at_from);
    d9_pb_uint(&p->pkt, CS_PRIMARY_TRACE_CLOCK, CLOCK_MONOTONIC);
    d9_pb_end(&p->pkt, cs);
    end_packet(p);
}

static void write_process_track(pf *p) {
    const d9_xmodel *m = p->m;
    size_t td = d9_pb_begin(&p->pkt, TP_TRACK_DESCRIPTOR);
    d9_pb_uint(&p->pkt, TD_UUID, UUID_PROCESS);
    size_t pd = d9_pb_begin(&p->pkt, TD_PROCESS);
    d9_pb_uint(&p->pkt, PD_PID, p->pid);
    d9_pb_string(&p->pkt, PD_PROCESS_NAME, m->service ? d9_xm_str(m, m->service) : "dial9 trace");
    d9_pb_end(&p->pkt, pd);
    d9_pb_end(&p->pkt, td);
    end_packet(p);
}

/* A worker's thread id on its track: the real one when known, else a made-up one that no
 * real thread has (above the kernel's PID_MAX_LIMIT of 4194304). */
static uint32_t worker_tid(const d9_xmodel *m, uint32_t w) {
    return m->workers[w].tid_known ? m->workers[w].tid : 0x10000000u + w;
}

/* A thread track: the pid in its ThreadDescriptor ties it to the process (no parent_uuid). */
static void write_worker_track(pf *p, uint32_t w) {
    const d9_xmodel *m = p->m;
    size_t td = d9_pb_begin(&p->pkt, TP_TRACK_DESCRIPTOR);
    d9_pb_uint(&p->pkt, TD_UUID, uuid_worker(w));
    d9_pb_string(&p->pkt, TD_NAME, d9_xm_str(m, m->workers[w].name));
    size_t th = d9_pb_begin(&p->pkt, TD_THREAD);
    d9_pb_uint(&p->pkt, THD_PID, p->pid);
    d9_pb_uint(&p->pkt, THD_TID, worker_tid(m, w));
    d9_pb_string(&p->pkt, THD_THREAD_NAME, d9_xm_str(m, m->workers[w].name));
    d9_pb_end(&p->pkt, th);
    d9_pb_end(&p->pkt, td);
    end_packet(p);
}

static void write_counter_track(pf *p, uint64_t uuid, const char *name, unsigned unit) {
    size_t td = d9_pb_begin(&p->pkt, TP_TRACK_DESCRIPTOR);
    d9_pb_uint(&p->pkt, TD_UUID, uuid);
    d9_pb_uint(&p->pkt, TD_PARENT_UUID, UUID_PROCESS);
    d9_pb_string(&p->pkt, TD_NAME, name);
    size_t cd = d9_pb_begin(&p->pkt, TD_COUNTER);
    d9_pb_uint(&p->pkt, CD_UNIT, unit);
    d9_pb_end(&p->pkt, cd);
    d9_pb_end(&p->pkt, td);
    end_packet(p);
}

static void write_plain_track(pf *p, uint64_t uuid, const char *name) {
    size_t td = d9_pb_begin(&p->pkt, TP_TRACK_DESCRIPTOR);
    d9_pb_uint(&p->pkt, TD_UUID, uuid);
    d9_pb_uint(&p->pkt, TD_PARENT_UUID, UUID_PROCESS);
    d9_pb_string(&p->pkt, TD_NAME, name);
    d9_pb_end(&p->pkt, td);
    end_packet(p);
}

static void write_tracks(pf *p) {
    const d9_xmodel *m = p->m;
    write_process_track(p);
    char name[600];
    for (uint32_t w = 0; w < m->worker_count; w++) {
        write_worker_track(p, w);
        snprintf(name, sizeof name, "%s: local queue", d9_xm_str(m, m->workers[w].name));
        write_counter_track(p, uuid_local_queue(w), name, UNIT_COUNT);
        snprintf(name, sizeof name, "%s: scheduling delay", d9_xm_str(m, m->workers[w].name));
        write_counter_track(p, uuid_sched_delay(w), name, UNIT_TIME_NS);
    }
    write_counter_track(p, UUID_GLOBAL_QUEUE, "global queue", UNIT_COUNT);
    write_plain_track(p, UUID_OUTSIDE_WAKES, "wakes from outside the workers");
    for (uint32_t k = 0; k < m->span_name_count; k++) {
        const char *span = d9_xm_str(m, m->span_names[k]);
        snprintf(name, sizeof name, "spans: %s", span);
        write_plain_track(p, uuid_span_name(k), name);
        for (uint32_t lane = 0; lane < m->span_name_lanes[k]; lane++) {
            if (lane) snprintf(name, sizeof name, "%s #%u", span, lane + 1);
            size_t td = d9_pb_begin(&p->pkt, TP_TRACK_DESCRIPTOR);
            d9_pb_uint(&p->pkt, TD_UUID, uuid_span_lane(k, lane));
            d9_pb_uint(&p->pkt, TD_PARENT_UUID, uuid_span_name(k));
            d9_pb_string(&p->pkt, TD_NAME, lane ? name : span);
            d9_pb_end(&p->pkt, td);
            end_packet(p);
        }
    }
}

/* ---- interned data ----------------------------------------------------------------------- */

/* Interned data goes out in packets of bounded size; the first one clears the incremental
 * state of the sequence. */
static size_t interned_open(pf *p, bool *first) {
    d9_pb_uint(&p->pkt, TP_SEQUENCE_ID, SEQUENCE_ID);
    d9_pb_uint(&p->pkt, TP_SEQUENCE_FLAGS,
               *first ? SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
                      : SEQ_NEEDS_INCREMENTAL_STATE);
    *first = false;
    return d9_pb_begin(&p->pkt, TP_INTERNED_DATA);
}

static void interned_close(pf *p, size_t id) {
    d9_pb_end(&p->pkt, id);
    end_packet(p);
}

/* Start a new interned-data packet when the current one is big enough. */
static size_t interned_next(pf *p, size_t id, bool *first) {
    if (p->pkt.len < INTERNED_CHUNK) return id;
    interned_close(p, id);
    return interned_open(p, first);
}

static void interned_name(d9_buf *b, uint32_t field, uint64_t iid, const char *s) {
    size_t e = d9_pb_begin(b, field);
    d9_pb_uint(b, IID, iid);
    d9_pb_string(b, INTERNED_NAME, s);
    d9_pb_end(b, e);
}

/* Frames of the model, then the synthetic off-CPU root frame. */
static void write_frames(pf *p, size_t *id, bool *first) {
    const d9_xmodel *m = p->m;
    for (size_t l = 0; l < m->loc_count; l++) {
        const d9_xloc *loc = &m->locs[l];
        uint64_t map_iid = loc->mapping == D9_XNONE ? p->unknown_mapping_iid : loc->mapping + 1u;
        uint64_t rel_pc = loc->mapping == D9_XNONE ? loc->addr
                                                   : loc->addr - m->mappings[loc->mapping].start;
        for (uint32_t k = 0; k < loc->frame_count; k++) {
            uint32_t f = loc->first_frame + k;
            size_t e = d9_pb_begin(&p->pkt, ID_FRAMES);
            d9_pb_uint(&p->pkt, IID, (uint64_t)f + 1);
            d9_pb_uint(&p->pkt, FR_FUNCTION_NAME_ID, iid_of(m->frames[f].name));
            d9_pb_uint(&p->pkt, FR_MAPPING_ID, map_iid);
            d9_pb_uint(&p->pkt, FR_REL_PC, rel_pc);
            d9_pb_end(&p->pkt, e);
            *id = interned_next(p, *id, first);
        }
    }
    size_t e = d9_pb_begin(&p->pkt, ID_FRAMES);
    d9_pb_uint(&p->pkt, IID, p->offcpu_frame_iid);
    d9_pb_uint(&p->pkt, FR_FUNCTION_NAME_ID, fixed_iid(p, N_OFFCPU_ROOT));
    d9_pb_uint(&p->pkt, FR_MAPPING_ID, p->unknown_mapping_iid);
    d9_pb_uint(&p->pkt, FR_REL_PC, 0);
    d9_pb_end(&p->pkt, e);
}

static void write_mapping(pf *p, uint64_t iid, const d9_xmapping *mp, uint64_t path_iid) {
    size_t e = d9_pb_begin(&p->pkt, ID_MAPPINGS);
    d9_pb_uint(&p->pkt, IID, iid);
    if (mp->build_id) d9_pb_uint(&p->pkt, MP_BUILD_ID, iid_of(mp->build_id));
    d9_pb_uint(&p->pkt, MP_START_OFFSET, mp->file_offset);
    d9_pb_uint(&p->pkt, MP_EXACT_OFFSET, mp->file_offset);
    d9_pb_uint(&p->pkt, MP_START, mp->start);
    d9_pb_uint(&p->pkt, MP_END, mp->end);
    d9_pb_uint(&p->pkt, MP_PATH_STRING_IDS, path_iid);
    d9_pb_end(&p->pkt, e);
}

/* Call stacks: one per (stack, off-CPU or not) used by a sample. iid = 2 * stack + 1 (+1 for
 * the off-CPU variant, rooted at the synthetic frame). */
static uint64_t callstack_iid(uint32_t stack, bool offcpu) { return 2ull * stack + 1 + offcpu; }

static int write_callstacks(pf *p, size_t *id, bool *first) {
    const d9_xmodel *m = p->m;
    uint8_t *done = calloc(m->stack_count + 1, 1); /* bit 0: on-CPU written, bit 1: off-CPU */
    uint32_t *frames = NULL;
    size_t cap = 0;
    if (!done) return -1;
    for (size_t i = 0; i < m->sample_count; i++) {
        const d9_xsample *s = &m->samples[i];
        bool off = s->source == D9_XSAMPLE_OFFCPU;
        uint8_t bit = off ? 2 : 1;
        if (done[s->stack] & bit) continue;
        done[s->stack] |= bit;
        long n = d9_xsample_frames(m, s, &frames, &cap);
        if (n < 0) {
            free(done);
            free(frames);
            return -1;
        }
        size_t e = d9_pb_begin(&p->pkt, ID_CALLSTACKS);
        d9_pb_uint(&p->pkt, IID, callstack_iid(s->stack, off));
        size_t packed = d9_pb_begin(&p->pkt, CSK_FRAME_IDS); /* root frame first */
        if (off) d9_put_varint(&p->pkt, p->offcpu_frame_iid);
        for (long k = 0; k < n; k++) d9_put_varint(&p->pkt, (uint64_t)frames[k] + 1);
        d9_pb_end(&p->pkt, packed);
        d9_pb_end(&p->pkt, e);
        *id = interned_next(p, *id, first);
    }
    free(done);
    free(frames);
    return 0;
}

static int write_interned(pf *p) {
    const d9_xmodel *m = p->m;
    size_t nstr = m->strings.count;
    /* which model strings each interning index needs */
    uint8_t *need = calloc(nstr + 1, 1);
    if (!need) return -1;
    enum { NEED_EVENT = 1, NEED_FUNCTION = 2, NEED_PATH = 4, NEED_BUILD = 8, NEED_ARG = 16 };
    if (m->poll_parts) /* the polls' attribution arguments (export_attribution.h) */
        for (int k = 0; k < D9M_PARTS; k++) {
            need[m->part_names[k]] |= NEED_ARG;
            if (m->span_count) need[m->span_part_names[k]] |= NEED_ARG;
        }
    for (size_t i = 0; i < m->poll_count; i++)
        if (m->polls[i].loc) need[m->polls[i].loc] |= NEED_EVENT;
    for (size_t i = 0; i < m->span_count; i++) need[m->spans[i].name] |= NEED_EVENT;
    for (size_t i = 0; i < m->frame_count; i++) need[m->frames[i].name] |= NEED_FUNCTION;
    for (size_t i = 0; i < m->mapping_count; i++) {
        need[m->mappings[i].path] |= NEED_PATH;
        if (m->mappings[i].build_id) need[m->mappings[i].build_id] |= NEED_BUILD;
    }

    bool first = true;
    size_t id = interned_open(p, &first);
    /* the writer's own names: categories, slice names, argument names, the synthetic frame's
     * function and the unknown mapping's path (each index only needs the ones it uses, but a
     * few spare entries cost nothing) */
    for (int k = 0; k < N_FIXED_COUNT; k++) {
        const char *s = fixed_names[k];
        uint64_t iid = fixed_iid(p, (enum fixed_name)k);
        if (k >= N_SPAN && !m->span_count) continue; /* a trace without spans: as before them */
        if (k == N_POLL || k == N_PARK || k == N_WAKE || k == N_SPAN) {
            interned_name(&p->pkt, ID_EVENT_CATEGORIES, iid, s);
            interned_name(&p->pkt, ID_EVENT_NAMES, iid, s);
        } else if (k == N_OFFCPU_ROOT) {
            interned_name(&p->pkt, ID_FUNCTION_NAMES, iid, s);
        } else if (k == N_UNKNOWN_MAPPING) {
            interned_name(&p->pkt, ID_MAPPING_PATHS, iid, s);
        } else {
            interned_name(&p->pkt, ID_DEBUG_ANNOTATION_NAMES, iid, s);
        }
    }
    for (size_t i = 0; i < nstr; i++) {
        if (!need[i]) continue;
        const char *s = d9_xm_str(m, (uint32_t)i);
        if (need[i] & NEED_EVENT) interned_name(&p->pkt, ID_EVENT_NAMES, iid_of((uint32_t)i), s);
        if (need[i] & NEED_FUNCTION) interned_name(&p->pkt, ID_FUNCTION_NAMES, iid_of((uint32_t)i), s);
        if (need[i] & NEED_PATH) interned_name(&p->pkt, ID_MAPPING_PATHS, iid_of((uint32_t)i), s);
        if (need[i] & NEED_BUILD) interned_name(&p->pkt, ID_BUILD_IDS, iid_of((uint32_t)i), s);
        if (need[i] & NEED_ARG) interned_name(&p->pkt, ID_DEBUG_ANNOTATION_NAMES, iid_of((uint32_t)i), s);
        id = interned_next(p, id, &first);
    }
    free(need);
    for (size_t i = 0; i < m->mapping_count; i++) {
        write_mapping(p, i + 1, &m->mappings[i], iid_of(m->mappings[i].path));
        id = interned_next(p, id, &first);
    }
    d9_xmapping unknown = {.start = 0, .end = UINT64_MAX};
    write_mapping(p, p->unknown_mapping_iid, &unknown, fixed_iid(p, N_UNKNOWN_MAPPING));
    write_frames(p, &id, &first);
    int rc = write_callstacks(p, &id, &first);
    interned_close(p, id);
    return rc;
}

/* ---- events ------------------------------------------------------------------------------ */

enum item_kind { IT_POLL_BEGIN, IT_POLL_END, IT_PARK_BEGIN, IT_PARK_END, IT_WAKE, IT_LOCAL_QUEUE,
                 IT_SCHED_DELAY, IT_GLOBAL_QUEUE, IT_SAMPLE, IT_SPAN_BEGIN, IT_SPAN_END };

/* One packet to write: sorted by (ts, seq). seq follows each track's own order, so that at
 * equal timestamps a slice's END comes after its BEGIN and before the next slice's BEGIN. */
typedef struct item {
    uint64_t ts;
    uint32_t seq;
    uint32_t index;
    uint8_t kind;
} item;

static int cmp_item(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static item *collect_items(const d9_xmodel *m, size_t *count) {
    size_t n = 2 * m->poll_count + 2 * m->park_count + m->wake_count + m->local_queue_count +
               m->sched_delay_count + m->global_queue_count + m->sample_count + 2 * m->span_count;
    item *it = malloc((n + 1) * sizeof *it);
    if (!it) return NULL;
    uint32_t seq = 0;
    size_t k = 0;
    /* per worker, polls and parks merged in start order */
    size_t pk = 0;
    for (uint32_t w = 0; w < m->worker_count; w++) {
        size_t i = m->worker_polls[w], iend = m->worker_polls[w + 1];
        while (pk < m->park_count && m->parks[pk].worker < w) pk++;
        size_t j = pk;
        while (i < iend || (j < m->park_count && m->parks[j].worker == w)) {
            bool poll = j >= m->park_count || m->parks[j].worker != w ||
                        (i < iend && m->polls[i].start <= m->parks[j].start);
            if (poll) {
                it[k++] = (item){m->polls[i].start, seq++, (uint32_t)i, IT_POLL_BEGIN};
                it[k++] = (item){m->polls[i].end, seq++, (uint32_t)i, IT_POLL_END};
                i++;
            } else {
                it[k++] = (item){m->parks[j].start, seq++, (uint32_t)j, IT_PARK_BEGIN};
                it[k++] = (item){m->parks[j].end, seq++, (uint32_t)j, IT_PARK_END};
                j++;
            }
        }
        pk = j;
    }
    for (size_t i = 0; i < m->wake_count; i++) it[k++] = (item){m->wakes[i].ts, seq++, (uint32_t)i, IT_WAKE};
    for (size_t i = 0; i < m->local_queue_count; i++)
        it[k++] = (item){m->local_queue[i].ts, seq++, (uint32_t)i, IT_LOCAL_QUEUE};
    for (size_t i = 0; i < m->sched_delay_count; i++)
        it[k++] = (item){m->sched_delay[i].ts, seq++, (uint32_t)i, IT_SCHED_DELAY};
    for (size_t i = 0; i < m->global_queue_count; i++)
        it[k++] = (item){m->global_queue[i].ts, seq++, (uint32_t)i, IT_GLOBAL_QUEUE};
    for (size_t i = 0; i < m->sample_count; i++)
        it[k++] = (item){m->samples[i].ts, seq++, (uint32_t)i, IT_SAMPLE};
    /* by start: on a lane, a span's end comes before the next one's begin at the same time */
    for (size_t i = 0; i < m->span_count; i++) {
        it[k++] = (item){m->spans[i].start, seq++, (uint32_t)i, IT_SPAN_BEGIN};
        it[k++] = (item){m->spans[i].end, seq++, (uint32_t)i, IT_SPAN_END};
    }
    qsort(it, k, sizeof *it, cmp_item);
    *count = k;
    return it;
}

static void annotation_uint(pf *p, enum fixed_name name, uint64_t v) {
    d9_buf *b = &p->pkt;
    size_t a = d9_pb_begin(b, TE_DEBUG_ANNOTATIONS);
    d9_pb_uint(b, DA_NAME_IID, fixed_iid(p, name));
    d9_pb_uint(b, DA_UINT_VALUE, v);
    d9_pb_end(b, a);
}

static void annotation_string(pf *p, enum fixed_name name, const char *v) {
    d9_buf *b = &p->pkt;
    size_t a = d9_pb_begin(b, TE_DEBUG_ANNOTATIONS);
    d9_pb_uint(b, DA_NAME_IID, fixed_iid(p, name));
    d9_pb_string(b, DA_STRING_VALUE, v);
    d9_pb_end(b, a);
}

static void write_item(pf *p, const item *it) {
    const d9_xmodel *m = p->m;
    d9_buf *b = &p->pkt;
    size_t te;
    switch ((enum item_kind)it->kind) {
    case IT_POLL_BEGIN: {
        const d9_xpoll *q = &m->polls[it->index];
        begin_timed_packet(p, it->ts, SEQ_NEEDS_INCREMENTAL_STATE);
        te = d9_pb_begin(b, TP_TRACK_EVENT);
        d9_pb_uint(b, TE_TYPE, TYPE_SLICE_BEGIN);
        d9_pb_uint(b, TE_TRACK_UUID, uuid_worker(q->worker));
        d9_pb_uint(b, TE_CATEGORY_IIDS, fixed_iid(p, N_POLL));
        d9_pb_uint(b, TE_NAME_IID, q->loc ? iid_of(q->loc) : fixed_iid(p, N_POLL));
        annotation_uint(p, N_TASK_ID, q->task);
        annotation_uint(p, N_LOCAL_QUEUE, q->queue);
        if (m->poll_parts) /* where its time went: the nonzero parts */
            for (int k = 0; k < D9M_PARTS; k++) {
                if (!m->poll_parts[it->index].ns[k]) continue;
                size_t a = d9_pb_begin(b, TE_DEBUG_ANNOTATIONS);
                d9_pb_uint(b, DA_NAME_IID, iid_of(m->part_names[k]));
                d9_pb_uint(b, DA_UINT_VALUE, m->poll_parts[it->index].ns[k]);
                d9_pb_end(b, a);
            }
        for (uint32_t k = 0; k < q->wakes_count; k++) /* flows from the wakes that caused it */
            d9_pb_fixed64(b, TE_TERMINATING_FLOW_IDS, (uint64_t)m->wake_order[q->wakes_first + k] + 1);
        d9_pb_end(b, te);
        break;
    }
    case IT_PARK_BEGIN: {
        const d9_xpark *k = &m->parks[it->index];
        begin_timed_packet(p, it->ts, SEQ_NEEDS_INCREMENTAL_STATE);
        te = d9_pb_begin(b, TP_TRACK_EVENT);
        d9_pb_uint(b, TE_TYPE, TYPE_SLICE_BEGIN);
        d9_pb_uint(b, TE_TRACK_UUID, uuid_worker(k->worker));
        d9_pb_uint(b, TE_CATEGORY_IIDS, fixed_iid(p, N_PARK));
        d9_pb_uint(b, TE_NAME_IID, fixed_iid(p, N_PARK));
        if (k->has_sched_wait) annotation_uint(p, N_SCHED_WAIT, k->sched_wait_ns);
        if (k->has_cpu) annotation_uint(p, N_CPU_NS, k->cpu_ns);
        d9_pb_end(b, te);
        break;
    }
    case IT_POLL_END:
    case IT_PARK_END: {
        uint32_t w = it->kind == IT_POLL_END ? m->polls[it->index].worker : m->parks[it->index].worker;
        begin_timed_packet(p, it->ts, 0);
        te = d9_pb_begin(b, TP_TRACK_EVENT);
        d9_pb_uint(b, TE_TYPE, TYPE_SLICE_END);
        d9_pb_uint(b, TE_TRACK_UUID, uuid_worker(w));
        d9_pb_end(b, te);
        break;
    }
    case IT_WAKE: {
        const d9_xwake *wk = &m->wakes[it->index];
        begin_timed_packet(p, it->ts, SEQ_NEEDS_INCREMENTAL_STATE);
        te = d9_pb_begin(b, TP_TRACK_EVENT);
        d9_pb_uint(b, TE_TYPE, TYPE_INSTANT);
        d9_pb_uint(b, TE_TRACK_UUID,
                   wk->from_worker == D9_XNONE ? UUID_OUTSIDE_WAKES : uuid_worker(wk->from_worker));
        d9_pb_uint(b, TE_CATEGORY_IIDS, fixed_iid(p, N_WAKE));
        d9_pb_uint(b, TE_NAME_IID, fixed_iid(p, N_WAKE));
        annotation_uint(p, N_WOKEN, wk->woken_task);
        annotation_uint(p, N_WAKER, wk->waker_task);
        if (wk->target != D9_XNONE) {
            const d9_xpoll *q = &m->polls[wk->target];
            if (q->loc) annotation_string(p, N_WOKEN_LOC, d9_xm_str(m, q->loc));
            d9_pb_fixed64(b, TE_FLOW_IDS, (uint64_t)it->index + 1);
        }
        d9_pb_end(b, te);
        break;
    }
    case IT_LOCAL_QUEUE:
    case IT_SCHED_DELAY:
    case IT_GLOBAL_QUEUE: {
        const d9_xcounter *c = it->kind == IT_LOCAL_QUEUE   ? &m->local_queue[it->index]
                               : it->kind == IT_SCHED_DELAY ? &m->sched_delay[it->index]
                                                            : &m->global_queue[it->index];
        uint64_t track = it->kind == IT_LOCAL_QUEUE   ? uuid_local_queue(c->worker)
                         : it->kind == IT_SCHED_DELAY ? uuid_sched_delay(c->worker)
                                                      : UUID_GLOBAL_QUEUE;
        begin_timed_packet(p, it->ts, 0);
        te = d9_pb_begin(b, TP_TRACK_EVENT);
        d9_pb_uint(b, TE_TYPE, TYPE_COUNTER);
        d9_pb_uint(b, TE_TRACK_UUID, track);
        d9_pb_int(b, TE_COUNTER_VALUE, c->value > INT64_MAX ? INT64_MAX : (int64_t)c->value);
        d9_pb_end(b, te);
        break;
    }
    case IT_SPAN_BEGIN: {
        const d9_xspan *s = &m->spans[it->index];
        begin_timed_packet(p, it->ts, SEQ_NEEDS_INCREMENTAL_STATE);
        te = d9_pb_begin(b, TP_TRACK_EVENT);
        d9_pb_uint(b, TE_TYPE, TYPE_SLICE_BEGIN);
        d9_pb_uint(b, TE_TRACK_UUID, uuid_span_lane(s->name_index, s->lane));
        d9_pb_uint(b, TE_CATEGORY_IIDS, fixed_iid(p, N_SPAN));
        d9_pb_uint(b, TE_NAME_IID, iid_of(s->name));
        annotation_uint(p, N_SPAN_ID, s->id);
        annotation_uint(p, N_TASK_ID, s->begin_task);
        annotation_uint(p, N_SPAN_POLL, s->parts.poll_ns);
        annotation_uint(p, N_SPAN_QUEUED, s->parts.queued_ns);
        annotation_uint(p, N_SPAN_WAIT, s->parts.wait_ns);
        annotation_uint(p, N_SPAN_UNKNOWN, s->parts.unknown_ns);
        if (m->poll_parts) /* its poll part by cause: the nonzero parts */
            for (int k = 0; k < D9M_PARTS; k++) {
                if (!s->poll_parts.ns[k]) continue;
                size_t a = d9_pb_begin(b, TE_DEBUG_ANNOTATIONS);
                d9_pb_uint(b, DA_NAME_IID, iid_of(m->span_part_names[k]));
                d9_pb_uint(b, DA_UINT_VALUE, s->poll_parts.ns[k]);
                d9_pb_end(b, a);
            }
        if (!s->ended) annotation_uint(p, N_SPAN_UNENDED, 1);
        d9_pb_end(b, te);
        break;
    }
    case IT_SPAN_END: {
        const d9_xspan *s = &m->spans[it->index];
        begin_timed_packet(p, it->ts, 0);
        te = d9_pb_begin(b, TP_TRACK_EVENT);
        d9_pb_uint(b, TE_TYPE, TYPE_SLICE_END);
        d9_pb_uint(b, TE_TRACK_UUID, uuid_span_lane(s->name_index, s->lane));
        d9_pb_end(b, te);
        break;
    }
    case IT_SAMPLE: {
        const d9_xsample *s = &m->samples[it->index];
        bool off = s->source == D9_XSAMPLE_OFFCPU;
        const d9_xstack *st = &m->stacks[s->stack];
        bool kernel_leaf = st->count && m->locs[m->stack_locs[st->first]].addr >= 0xffff800000000000ull;
        begin_timed_packet(p, it->ts, SEQ_NEEDS_INCREMENTAL_STATE);
        te = d9_pb_begin(b, TP_PERF_SAMPLE);
        d9_pb_uint(b, PS_PID, p->pid);
        d9_pb_uint(b, PS_TID, s->worker != D9_XNONE ? worker_tid(m, s->worker) : s->tid);
        d9_pb_uint(b, PS_CALLSTACK_IID, callstack_iid(s->stack, off));
        d9_pb_uint(b, PS_CPU_MODE, kernel_leaf ? MODE_KERNEL : MODE_USER);
        d9_pb_end(b, te);
        break;
    }
    }
    end_packet(p);
}

int d9_export_perfetto(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen) {
    (void)o;
    pf p = {.m = m, .out = out};
    d9_buf_init(&p.pkt);
    d9_buf_init(&p.file);
    p.offcpu_frame_iid = (uint64_t)m->frame_count + 1;
    p.unknown_mapping_iid = (uint64_t)m->mapping_count + 1;
    p.pid = m->pid ? m->pid : 0x10000000u - 1; /* a pid no real process has when unknown */
    int rc = D9_XWRITE_OK;
    item *items = NULL;
    write_clock_snapshot(&p);
    write_tracks(&p);
    if (write_interned(&p) != 0) goto oom;
    size_t n = 0;
    items = collect_items(m, &n);
    if (!items) goto oom;
    for (size_t i = 0; i < n && !p.io_error; i++) write_item(&p, &items[i]);
    flush_file(&p);
    if (p.pkt.failed || p.file.failed) goto oom;
    if (p.io_error || fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error");
        rc = D9_XWRITE_ERROR;
    }
    goto done;
oom:
    snprintf(err, errlen, "out of memory while writing the Perfetto trace");
    rc = D9_XWRITE_ERROR;
done:
    free(items);
    d9_buf_free(&p.pkt);
    d9_buf_free(&p.file);
    return rc;
}
