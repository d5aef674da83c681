/* pprof: a gzip-compressed perftools.profiles.Profile (profile.proto), written with the
 * hand-made protobuf writer, for `go tool pprof`, the Perfetto UI, speedscope and profiling
 * backends.
 *
 * One sample per stack sample (value: 1 sample), leaf location first, with labels: thread
 * (tid), worker, task_id and location (the poll the sample hit: its task and spawn
 * location), state ("parked" / "not in a poll" when no poll ran), kind ("cpu" /
 * "offcpu") and, for an off-CPU sample of a trace with switch records, cause ("lock", "io",
 * "sleep", "fault", "blocked_other", "runnable": export_attribution.h). So `pprof -tagfocus=location=...` or `-tagroot=location` slices a profile by
 * callback. Locations are the distinct addresses, with one line per inline level (innermost
 * first, as pprof wants); functions are (name, file) pairs; mappings come from the trace's
 * MemoryMapEvents. time_nanos is wall-clock time when the trace has a ClockSyncEvent. zlib is
 * loaded with dlopen when a profile is written (common/libz_loader.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/libz_loader.h"
#include "export/export.h"
#include "export/protobuf.h"

enum {
    PR_SAMPLE_TYPE = 1, PR_SAMPLE = 2, PR_MAPPING = 3, PR_LOCATION = 4, PR_FUNCTION = 5,
    PR_STRING_TABLE = 6, PR_TIME_NANOS = 9, PR_DURATION_NANOS = 10, PR_COMMENT = 13,
    PR_DEFAULT_SAMPLE_TYPE = 14,
    VT_TYPE = 1, VT_UNIT = 2,
    SA_LOCATION_ID = 1, SA_VALUE = 2, SA_LABEL = 3,
    LB_KEY = 1, LB_STR = 2, LB_NUM = 3,
    MA_ID = 1, MA_MEMORY_START = 2, MA_MEMORY_LIMIT = 3, MA_FILE_OFFSET = 4, MA_FILENAME = 5,
    MA_BUILD_ID = 6, MA_HAS_FUNCTIONS = 7, MA_HAS_FILENAMES = 8, MA_HAS_LINE_NUMBERS = 9,
    MA_HAS_INLINE_FRAMES = 10,
    LO_ID = 1, LO_MAPPING_ID = 2, LO_ADDRESS = 3, LO_LINE = 4,
    LI_FUNCTION_ID = 1, LI_LINE = 2,
    FN_ID = 1, FN_NAME = 2, FN_SYSTEM_NAME = 3, FN_FILENAME = 4,
};

/* The string table is the model's strings (same indexes: index 0 is "" in both) followed by
 * the writer's own. */
enum own_string {
    S_SAMPLES, S_COUNT, S_THREAD, S_WORKER, S_TASK_ID, S_LOCATION, S_STATE, S_KIND, S_CPU,
    S_OFFCPU, S_PARKED, S_NOT_IN_POLL, S_THREAD_NAME, S_COMMENT,
    S_ALLOC_OBJECTS, S_ALLOC_SPACE, S_INUSE_OBJECTS, S_INUSE_SPACE, S_BYTES, S_OWN_COUNT,
};
static const char *const own_strings[S_OWN_COUNT] = {
    [S_SAMPLES] = "samples", [S_COUNT] = "count", [S_THREAD] = "thread", [S_WORKER] = "worker",
    [S_TASK_ID] = "task_id", [S_LOCATION] = "location", [S_STATE] = "state", [S_KIND] = "kind",
    [S_CPU] = "cpu", [S_OFFCPU] = "offcpu", [S_PARKED] = "parked",
    [S_NOT_IN_POLL] = "not in a poll", [S_THREAD_NAME] = "thread_name",
    [S_COMMENT] = "", /* filled in: "dial9 export ..." */
    [S_ALLOC_OBJECTS] = "alloc_objects", [S_ALLOC_SPACE] = "alloc_space",
    [S_INUSE_OBJECTS] = "inuse_objects", [S_INUSE_SPACE] = "inuse_space", [S_BYTES] = "bytes",
};

static int64_t own(const d9_xmodel *m, enum own_string s) {
    return (int64_t)m->strings.count + s;
}

static void label_num(d9_buf *b, int64_t key, uint64_t num) {
    size_t l = d9_pb_begin(b, SA_LABEL);
    d9_pb_int(b, LB_KEY, key);
    d9_pb_uint(b, LB_NUM, num);
    d9_pb_end(b, l);
}

static void label_str(d9_buf *b, int64_t key, int64_t str) {
    size_t l = d9_pb_begin(b, SA_LABEL);
    d9_pb_int(b, LB_KEY, key);
    d9_pb_int(b, LB_STR, str);
    d9_pb_end(b, l);
}

static void write_sample(d9_buf *b, const d9_xmodel *m, const d9_xsample *s) {
    size_t e = d9_pb_begin(b, PR_SAMPLE);
    const d9_xstack *st = &m->stacks[s->stack];
    size_t ids = d9_pb_begin(b, SA_LOCATION_ID); /* packed, leaf first */
    for (uint32_t k = 0; k < st->count; k++) d9_put_varint(b, (uint64_t)m->stack_locs[st->first + k] + 1);
    d9_pb_end(b, ids);
    d9_pb_uint(b, SA_VALUE, 1);
    if (s->tid) label_num(b, own(m, S_THREAD), s->tid);
    if (s->thread_name) label_str(b, own(m, S_THREAD_NAME), s->thread_name);
    if (s->worker != D9_XNONE) label_num(b, own(m, S_WORKER), m->workers[s->worker].id);
    if (s->poll != D9_XNONE) {
        const d9_xpoll *p = &m->polls[s->poll];
        label_num(b, own(m, S_TASK_ID), p->task);
        if (p->loc) label_str(b, own(m, S_LOCATION), p->loc);
    } else {
        label_str(b, own(m, S_STATE), own(m, s->parked ? S_PARKED : S_NOT_IN_POLL));
    }
    label_str(b, own(m, S_KIND), own(m, s->source == D9_XSAMPLE_OFFCPU ? S_OFFCPU : S_CPU));
    if (m->sample_cause && s->source == D9_XSAMPLE_OFFCPU) /* the attribution's cause */
        label_str(b, m->cause_key, m->cause_names[m->sample_cause[s - m->samples]]);
    d9_pb_end(b, e);
}

/* Functions: one per distinct (name, file), numbered from 1; fn_of_frame maps frames to them. */
static int write_functions(d9_buf *b, const d9_xmodel *m, uint32_t *fn_of_frame) {
    d9_u64_map seen = {0};
    uint32_t next = 1;
    for (size_t f = 0; f < m->frame_count; f++) {
        uint64_t key = (uint64_t)m->frames[f].name << 32 | m->frames[f].file;
        uint64_t *slot = d9_u64_map_upsert(&seen, key, 0);
        if (!slot) {
            d9_u64_map_free(&seen);
            return -1;
        }
        uint32_t id = (uint32_t)*slot;
        if (id == 0) { /* new: ids start at 1 */
            id = next++;
            *slot = id;
            size_t e = d9_pb_begin(b, PR_FUNCTION);
            d9_pb_uint(b, FN_ID, id);
            d9_pb_uint(b, FN_NAME, m->frames[f].name);
            d9_pb_uint(b, FN_SYSTEM_NAME, m->frames[f].name);
            if (m->frames[f].file) d9_pb_uint(b, FN_FILENAME, m->frames[f].file);
            d9_pb_end(b, e);
        }
        fn_of_frame[f] = id;
    }
    d9_u64_map_free(&seen);
    return 0;
}

static void write_locations(d9_buf *b, const d9_xmodel *m, const uint32_t *fn_of_frame) {
    for (size_t l = 0; l < m->loc_count; l++) {
        const d9_xloc *loc = &m->locs[l];
        size_t e = d9_pb_begin(b, PR_LOCATION);
        d9_pb_uint(b, LO_ID, l + 1);
        if (loc->mapping != D9_XNONE) d9_pb_uint(b, LO_MAPPING_ID, (uint64_t)loc->mapping + 1);
        d9_pb_uint(b, LO_ADDRESS, loc->addr);
        for (uint32_t k = 0; k < loc->frame_count; k++) { /* innermost first, caller last */
            uint32_t f = loc->first_frame + k;
            size_t li = d9_pb_begin(b, LO_LINE);
            d9_pb_uint(b, LI_FUNCTION_ID, fn_of_frame[f]);
            if (m->frames[f].line) d9_pb_uint(b, LI_LINE, m->frames[f].line);
            d9_pb_end(b, li);
        }
        d9_pb_end(b, e);
    }
}

static void write_mappings(d9_buf *b, const d9_xmodel *m) {
    bool symbols = false, files = false, inlines = false;
    for (size_t f = 0; f < m->frame_count; f++) {
        symbols |= m->frames[f].symbolized;
        files |= m->frames[f].file != 0;
        inlines |= m->frames[f].depth > 0;
    }
    for (size_t i = 0; i < m->mapping_count; i++) {
        const d9_xmapping *mp = &m->mappings[i];
        size_t e = d9_pb_begin(b, PR_MAPPING);
        d9_pb_uint(b, MA_ID, i + 1);
        d9_pb_uint(b, MA_MEMORY_START, mp->start);
        d9_pb_uint(b, MA_MEMORY_LIMIT, mp->end);
        d9_pb_uint(b, MA_FILE_OFFSET, mp->file_offset);
        d9_pb_uint(b, MA_FILENAME, mp->path);
        if (mp->build_id) d9_pb_uint(b, MA_BUILD_ID, mp->build_id);
        if (symbols) d9_pb_uint(b, MA_HAS_FUNCTIONS, 1);
        if (files) d9_pb_uint(b, MA_HAS_FILENAMES, 1);
        if (files) d9_pb_uint(b, MA_HAS_LINE_NUMBERS, 1);
        if (inlines) d9_pb_uint(b, MA_HAS_INLINE_FRAMES, 1);
        d9_pb_end(b, e);
    }
}

static void value_type(d9_buf *b, const d9_xmodel *m, enum own_string type, enum own_string unit) {
    size_t vt = d9_pb_begin(b, PR_SAMPLE_TYPE);
    d9_pb_int(b, VT_TYPE, own(m, type));
    d9_pb_int(b, VT_UNIT, own(m, unit));
    d9_pb_end(b, vt);
}

static uint64_t rounded(double v) { return v > 0 ? (uint64_t)(v + 0.5) : 0; }

/* The heap profile (--stacks heap): one sample per allocation site, as Go's heap profiles:
 * alloc_objects, alloc_space, inuse_objects, inuse_space, each weighted (model/heap_sites.h). */
static void write_heap_sites(d9_buf *b, const d9_xmodel *m) {
    for (size_t i = 0; i < m->heap.nsites; i++) {
        const d9m_heap_site *s = &m->heap.sites[i];
        size_t e = d9_pb_begin(b, PR_SAMPLE);
        const d9_xstack *st = &m->stacks[s->stack];
        size_t ids = d9_pb_begin(b, SA_LOCATION_ID);
        for (uint32_t k = 0; k < st->count; k++) d9_put_varint(b, (uint64_t)m->stack_locs[st->first + k] + 1);
        d9_pb_end(b, ids);
        size_t vals = d9_pb_begin(b, SA_VALUE); /* packed */
        d9_put_varint(b, rounded(s->alloc_count));
        d9_put_varint(b, rounded(s->alloc_bytes));
        d9_put_varint(b, rounded(s->inuse_count));
        d9_put_varint(b, rounded(s->inuse_bytes));
        d9_pb_end(b, vals);
        d9_pb_end(b, e);
    }
}

static int build_profile(d9_buf *b, const d9_xmodel *m, const d9_xopts *o) {
    unsigned stacks = o && o->stacks ? o->stacks : D9_XSTACKS_CPU;
    if (stacks == D9_XSTACKS_HEAP) {
        value_type(b, m, S_ALLOC_OBJECTS, S_COUNT);
        value_type(b, m, S_ALLOC_SPACE, S_BYTES);
        value_type(b, m, S_INUSE_OBJECTS, S_COUNT);
        value_type(b, m, S_INUSE_SPACE, S_BYTES);
        write_heap_sites(b, m);
    } else {
        value_type(b, m, S_SAMPLES, S_COUNT);
        for (size_t i = 0; i < m->sample_count; i++)
            if (d9_xsample_selected(&m->samples[i], stacks)) write_sample(b, m, &m->samples[i]);
    }
    write_mappings(b, m);
    uint32_t *fn_of_frame = malloc((m->frame_count + 1) * sizeof *fn_of_frame);
    if (!fn_of_frame || write_functions(b, m, fn_of_frame) != 0) {
        free(fn_of_frame);
        return -1;
    }
    write_locations(b, m, fn_of_frame);
    free(fn_of_frame);
    for (size_t i = 0; i < m->strings.count; i++) d9_pb_string(b, PR_STRING_TABLE, d9_xm_str(m, (uint32_t)i));
    char comment[300];
    snprintf(comment, sizeof comment, "dial9 export: %s%s%s samples",
             o && o->name ? o->name : "", o && o->name ? ", " : "",
             stacks == D9_XSTACKS_HEAP  ? "heap (weighted)"
             : stacks == D9_XSTACKS_ALL ? "cpu and off-cpu"
             : stacks == D9_XSTACKS_OFFCPU ? "off-cpu" : "cpu");
    /* the heap's strings only in a heap profile: CPU profiles stay as they were, byte for byte */
    int own_count = stacks == D9_XSTACKS_HEAP ? S_OWN_COUNT : S_ALLOC_OBJECTS;
    for (int s = 0; s < own_count; s++)
        d9_pb_string(b, PR_STRING_TABLE, s == S_COMMENT ? comment : own_strings[s]);
    if (m->have_realtime) d9_pb_int(b, PR_TIME_NANOS, (int64_t)m->realtime_at_from);
    d9_pb_int(b, PR_DURATION_NANOS, (int64_t)(m->to - m->from));
    d9_pb_int(b, PR_COMMENT, own(m, S_COMMENT));
    d9_pb_int(b, PR_DEFAULT_SAMPLE_TYPE, own(m, stacks == D9_XSTACKS_HEAP ? S_INUSE_SPACE : S_SAMPLES));
    return b->failed ? -1 : 0;
}

/* gzip the profile into out */
static int write_gzip(const d9_libz *zl, const d9_buf *b, FILE *out) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (zl->deflateInit2_(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof z) != Z_OK)
        return -1;
    unsigned char chunk[1 << 16];
    z.next_in = b->data;
    size_t left = b->len;
    int rc = 0, zr;
    do {
        uInt n = left > (1u << 30) ? (1u << 30) : (uInt)left;
        z.avail_in = n;
        left -= n;
        int flush = left ? Z_NO_FLUSH : Z_FINISH;
        do {
            z.next_out = chunk;
            z.avail_out = sizeof chunk;
            zr = zl->deflate(&z, flush);
            size_t have = sizeof chunk - z.avail_out;
            if (zr == Z_STREAM_ERROR || (have && fwrite(chunk, 1, have, out) != have)) {
                rc = -1;
                break;
            }
        } while (z.avail_out == 0);
    } while (rc == 0 && left);
    if (rc == 0 && zr != Z_STREAM_END) rc = -1;
    zl->deflateEnd(&z);
    return rc;
}

int d9_export_pprof(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen) {
    const d9_libz *zl = d9_libz_get(); /* before the work: a profile is gzip'ed or not written */
    if (!zl) {
        snprintf(err, errlen, "pprof profiles are gzip-compressed: %s", d9_libz_error());
        return D9_XWRITE_ERROR;
    }
    d9_buf b;
    d9_buf_init(&b);
    if (build_profile(&b, m, o) != 0) {
        d9_buf_free(&b);
        snprintf(err, errlen, "out of memory while writing the pprof profile");
        return D9_XWRITE_ERROR;
    }
    int rc = write_gzip(zl, &b, out);
    d9_buf_free(&b);
    if (rc != 0 || fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error");
        return D9_XWRITE_ERROR;
    }
    return D9_XWRITE_OK;
}
