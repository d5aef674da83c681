/* Encoding: what a stream needs before an event can refer to it (schemas, pooled strings,
 * locations and stacks, once per stream), every event that is not one of the hooks' (those
 * are inline in collector_encode.h), the preamble each segment starts with, and the rotation
 * when an event would overrun its segment. */
#include "core/collector_encode.h"

#include <stdlib.h>
#include <string.h>

#include "core/event_types.h"
#include "core/locations.h"
#include "core/thread_cpu_clock_lazy.h"
#include "core/workers.h"


static void write_pool_string(d9_collector *c, uint32_t id, const char *s) {
    d9_pool_frame pf;
    d9_enc_string_pool_begin(&c->out, &pf);
    d9_enc_string_pool_entry(&c->out, &pf, id, s, strlen(s));
    d9_enc_pool_end(&c->out, &pf);
}
/* Locations get ids in the order they are first used, so those of a stream are soon written
 * from 1 up: the prefix of them all written lets the merge's fast path test a location with
 * one compare (a server's polls and spans alternate between a few, which missed the one it
 * remembered: ~9 instructions each). Amortised: each mark is passed once per stream. */
static void advance_loc_prefix(d9_collector *c) {
    if (c->loc_prefix_stream != c->stream_no) {
        c->loc_prefix = 0;
        c->loc_prefix_stream = c->stream_no;
    }
    while (c->loc_prefix + 1 < c->loc_mark_len && c->loc_mark[c->loc_prefix + 1] == c->stream_no) c->loc_prefix++;
}

uint32_t d9_col_need_loc_slow(d9_collector *c, uint32_t id) {
    if (id >= c->loc_mark_len) {
        size_t n = c->loc_mark_len ? c->loc_mark_len : 1024;
        while (n <= id) n *= 2;
        uint64_t *m = realloc(c->loc_mark, n * sizeof *m);
        if (!m) return id; /* written again below: costs bytes, not correctness */
        memset(m + c->loc_mark_len, 0, (n - c->loc_mark_len) * sizeof *m);
        c->loc_mark = m;
        c->loc_mark_len = n;
    }
    if (id < c->loc_mark_len && c->loc_mark[id] == c->stream_no) return id;
    write_pool_string(c, id, d9_loc_name(id));
    if (id < c->loc_mark_len) {
        c->loc_mark[id] = c->stream_no;
        advance_loc_prefix(c);
    }
    return id;
}

/* Pool ids of other strings live above the location ids. */
static uint32_t need_string(d9_collector *c, const char *s) {
    d9_string_entry *e = d9_string_table_get(&c->strings, s ? s : "");
    if (!e) return need_loc(c, D9_LOC_UNKNOWN);
    uint32_t id = 0x80000000u + e->index;
    if (e->mark != c->stream_no) {
        write_pool_string(c, id, e->str);
        e->mark = c->stream_no;
    }
    return id;
}

/* The writer's list of what the segment holds to symbolize (d9_collector_collect_symbols):
 * an event's stack, as a scan of the file would find it. Its frames below the leaf are return
 * addresses, listed once per stream with the pool entry; its leaf is listed once per stream for
 * each way events use it (the interrupted instruction of a CPU sample, else a return address).
 * Listed when encoded: bytes that then go to a later segment are encoded again there. */
static void list_stack(d9_collector *c, d9_stack_entry *e, bool new_in_stream, bool leaf_exact) {
    d9_sym_input *in = d9_segw_symbols(c->w);
    if (!in || e->count == 0) return;
    if (new_in_stream) {
        e->leaf_listed = 0;
        for (uint32_t i = 1; i < e->count; i++) d9_sym_input_add_address(in, e->frames[i], D9_ADDR_RETURN);
    }
    uint8_t flag = leaf_exact ? D9_ADDR_EXACT : D9_ADDR_RETURN;
    if (e->leaf_listed & flag) return;
    e->leaf_listed |= flag;
    d9_sym_input_add_address(in, e->frames[0], flag);
}

/* A pooled stack, written once per stream; one that says how it was obtained (`method`, a
 * d9_stack_method) is followed by a StackOriginEvent the first time in each stream. */
static uint32_t need_stack(d9_collector *c, const uint64_t *frames, uint32_t n, uint8_t method, uint64_t ts,
                           bool leaf_exact) {
    d9_stack_entry *e = d9_stack_table_get_tagged(&c->stacks, frames, n, method);
    if (!e) e = d9_stack_table_get(&c->stacks, NULL, 0); /* no memory: an empty stack */
    if (!e) return 0;
    bool new_in_stream = e->mark != c->stream_no;
    if (c->list_symbols) list_stack(c, e, new_in_stream, leaf_exact);
    if (new_in_stream) {
        d9_pool_frame pf;
        d9_enc_stack_pool_begin(&c->out, &pf);
        d9_enc_stack_pool_entry(&c->out, &pf, e->index, e->frames, e->count);
        d9_enc_pool_end(&c->out, &pf);
        e->mark = c->stream_no;
        c->out_has_stacks = true; /* the segment that takes these bytes is symbolized */
        if (e->tag) {
            need_builtin(c, D9_SCH_STACK_ORIGIN);
            d9_enc_event(&c->out, &c->st, D9_SCH_STACK_ORIGIN, ts);
            d9_put_u32(&c->out, e->index);
            d9_put_u8(&c->out, e->tag);
        }
    }
    return e->index;
}

/* ---------------------------------------------------------------- encoding */

/* The segment's metadata: the run's entries and every runtime's workers known so far. */
static void encode_metadata(d9_collector *c, uint64_t ts) {
    c->meta_workers = d9_workers_count(); /* before listing them: a later one is caught later */
    /* DIAL9_THREAD_CPU=lazy: how many threads have opened their page so far (ThreadCpuPageEvent each) */
    if (d9_tcc_lazy_on()) d9_run_metadata_set(&c->meta, "thread_cpu_pages", "%u", d9_tcc_lazy_pages());
    c->meta_version_written = c->meta.version;
    c->meta_written_ns = c->now_ns;
    need_builtin(c, D9_SCH_SEGMENT_METADATA);
    d9_enc_event(&c->out, &c->st, D9_SCH_SEGMENT_METADATA, ts);
    d9_pool_frame map;
    d9_enc_string_map_begin(&c->out, &map);
    d9_run_metadata_encode(&c->meta, &c->out, &map);
    d9_enc_string_map_end(&c->out, &map);
    d9_sym_input *in = c->list_symbols ? d9_segw_symbols(c->w) : NULL;
    const char *boot = in ? d9_run_metadata_get(&c->meta, "boot_id") : NULL;
    if (boot && strlen(boot) < sizeof in->boot_id) strcpy(in->boot_id, boot);
}

void d9_col_encode_preamble(d9_collector *c) {
    encode_metadata(c, c->now_ns);

    need_builtin(c, D9_SCH_CLOCK_SYNC);
    uint64_t mono, real;
    d9_clock_realtime_pair(&mono, &real);
    d9_enc_event(&c->out, &c->st, D9_SCH_CLOCK_SYNC, mono);
    d9_put_varint(&c->out, real);
}

void d9_col_encode_metadata_change(d9_collector *c, bool last) {
    if (c->meta.version == c->meta_version_written) return;
    if (!last && c->now_ns - c->meta_written_ns < c->meta_rewrite_ns) return;
    ensure_stream(c);
    if (c->meta.version == c->meta_version_written) return; /* a new segment's preamble said it */
    size_t mark = c->out.len;
    /* not before what this drain encoded already: no timestamp reset for it */
    encode_metadata(c, c->st.ts_base > c->now_ns ? c->st.ts_base : c->now_ns);
    c->meta_in_out = true;
    if (c->out.len <= c->room || (mark == 0 && d9_segw_at_segment_start(c->w))) return;
    /* No room left in this segment: the next one's preamble says it (or, when this write
     * fails and no segment starts, the next drain). */
    c->meta_in_out = false;
    c->meta_version_written = ~c->meta.version;
    c->meta_written_ns = 0;
    c->out.len = mark;
    d9_col_flush_out(c);
    if (c->stream_open) {
        d9_segw_rotate(c->w);
        d9_col_writer_changed(c);
    }
    ensure_stream(c);
}

void d9_col_encode_other(d9_collector *c, const out_event *e) {
    d9_buf *b = &c->out;
    switch (e->schema) {
    case D9_SCH_DROPPED_EVENTS: {
        need_builtin(c, e->schema);
        uint32_t reason = need_string(c, e->s[0]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_u32(b, reason);
        d9_put_u32(b, (uint32_t)e->v[1]);
        d9_put_varint(b, e->v[2]);
        break;
    }
    case D9_SCH_WORKER_REGISTERED: {
        need_builtin(c, e->schema);
        uint32_t runtime = need_string(c, e->s[0]);
        uint32_t name = need_string(c, e->s[1]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_u32(b, (uint32_t)e->v[1]);
        d9_put_u32(b, runtime);
        d9_put_varint(b, e->v[2]);
        d9_put_u32(b, name);
        /* A worker the segment's metadata does not list yet: write it again, complete, so a
         * reader of this segment alone learns every runtime's workers (dial9's viewer takes
         * runtimes from the metadata only, and keeps the last list of each). Part of this
         * event's bytes, so a rotation moves both to the next segment together. */
        if (e->v[0] < D9_MAX_WORKERS && e->v[0] >= c->meta_workers) encode_metadata(c, e->ts);
        break;
    }
    case D9_SCH_CPU_SAMPLE: {
        need_builtin(c, e->schema);
        uint32_t name = e->s[0] ? need_string(c, e->s[0]) : 0;
        uint32_t stack = need_stack(c, e->payload, e->nframes, (uint8_t)e->v[4], e->ts, true);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);               /* worker */
        d9_put_u32(b, (uint32_t)e->v[1]);        /* tid */
        d9_put_u8(b, (uint8_t)e->v[2]);          /* source */
        d9_put_u8(b, e->s[0] ? 1 : 0);
        if (e->s[0]) d9_put_u32(b, name);
        d9_put_u32(b, stack);
        d9_put_u8(b, e->v[3] != UINT64_MAX ? 1 : 0); /* cpu */
        if (e->v[3] != UINT64_MAX) d9_put_varint(b, e->v[3]);
        break;
    }
    case D9_SCH_TASK_DUMP: {
        need_builtin(c, e->schema);
        uint32_t stack = need_stack(c, e->payload, e->nframes, (uint8_t)e->v[1], e->ts, false);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_u32(b, stack);
        break;
    }
    case D9_SCH_ALLOC: {
        need_builtin(c, e->schema);
        uint32_t stack = need_stack(c, e->payload, e->nframes, (uint8_t)e->v[3], e->ts, false);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_u32(b, (uint32_t)e->v[0]); /* tid */
        d9_put_varint(b, e->v[1]);        /* size */
        d9_put_varint(b, e->v[2]);        /* addr */
        d9_put_u32(b, stack);
        break;
    }
    case D9_SCH_FREE:
        need_builtin(c, e->schema);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_u32(b, (uint32_t)e->v[0]); /* tid */
        d9_put_varint(b, e->v[1]);        /* addr */
        d9_put_varint(b, e->v[2]);        /* size */
        d9_put_varint(b, e->v[3]);        /* alloc_timestamp_ns */
        break;
    case D9_SCH_SCHED_SWITCH:
        need_builtin(c, e->schema);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_u32(b, (uint32_t)e->v[0]);  /* tid */
        d9_put_varint(b, e->v[1]);         /* worker */
        d9_put_u8(b, e->v[2] ? 1 : 0);     /* switch out */
        d9_put_u8(b, e->v[3] ? 1 : 0);     /* preempted */
        d9_put_u8(b, e->v[4] != UINT64_MAX ? 1 : 0);
        if (e->v[4] != UINT64_MAX) d9_put_varint(b, e->v[4]);
        break;
    case D9_SCH_COVERAGE: {
        need_builtin(c, e->schema);
        uint32_t src = need_string(c, e->s[0]), mode = need_string(c, e->s[1]);
        uint32_t prev = need_string(c, e->s[2]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_u32(b, src);
        d9_put_u32(b, mode);
        d9_put_u32(b, prev);
        for (int i = 0; i < 5; i++) d9_put_varint(b, e->v[i]);
        break;
    }
    case D9_SCH_SPAN_ENTER:
    case D9_SCH_SPAN_EXIT: {
        need_builtin(c, e->schema);
        uint32_t name = need_loc(c, (uint32_t)e->v[2]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);                            /* worker */
        d9_put_varint(b, e->v[1]);                            /* span id */
        if (e->schema == D9_SCH_SPAN_ENTER) d9_put_u8(b, 0); /* no parent */
        d9_put_u32(b, name);
        d9_put_varint(b, e->v[3]);                            /* task */
        d9_put_u32(b, (uint32_t)e->v[4]);                     /* tid */
        break;
    }
    case D9_SCH_UPLOAD_LOSS: {
        need_builtin(c, e->schema);
        uint32_t run = need_string(c, e->s[0]), reason = need_string(c, e->s[1]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_u32(b, run);
        for (int i = 0; i < 4; i++) d9_put_varint(b, e->v[i]);
        d9_put_u32(b, reason);
        break;
    }
    case D9_SCH_TASK_OBJECT:
        need_builtin(c, e->schema);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_varint(b, e->v[1]);
        break;
    case D9_SCH_MEMORY_MAP: {
        need_builtin(c, e->schema);
        uint32_t path = need_string(c, e->s[0]);
        d9_enc_event(b, &c->st, e->schema, e->ts);
        d9_put_varint(b, e->v[0]);
        d9_put_varint(b, e->v[1]);
        d9_put_varint(b, e->v[2]);
        d9_put_u32(b, path);
        d9_put_lstring(b, e->s[1], strlen(e->s[1]));
        d9_sym_input *in = c->list_symbols ? d9_segw_symbols(c->w) : NULL;
        if (in)
            d9_sym_input_add_map(in, e->v[0], e->v[1], e->v[2], e->s[0] ? e->s[0] : "", e->s[0] ? strlen(e->s[0]) : 0,
                                 e->s[1], strlen(e->s[1]));
        break;
    }
    default: { /* custom event */
        const d9_event_type *t = e->custom;
        uint16_t id = (uint16_t)(D9_SCH_FIRST_CUSTOM + t->index);
        need_schema(c, id, &t->def);
        uint32_t pooled[D9_MAX_EVENT_FIELDS];
        const uint64_t *w = e->payload;
        for (uint16_t i = 0; i < t->field_count; i++) {
            if (t->kinds[i] == D9_STATIC_STRING) pooled[i] = need_string(c, (const char *)(uintptr_t)*w);
            w += t->kinds[i] == D9_STRING ? 1 + (*w + 7) / 8 : 1;
        }
        d9_enc_event(b, &c->st, id, e->ts);
        w = e->payload;
        for (uint16_t i = 0; i < t->field_count; i++) {
            switch (t->kinds[i]) {
            case D9_U64: d9_put_varint(b, *w++); break;
            case D9_I64: d9_put_u64(b, *w++); break;
            case D9_F64: d9_put_u64(b, *w++); break;
            case D9_BOOL: d9_put_u8(b, *w++ ? 1 : 0); break;
            case D9_STATIC_STRING: d9_put_u32(b, pooled[i]); w++; break;
            case D9_STRING: d9_put_lstring(b, (const char *)(w + 1), *w); w += 1 + (*w + 7) / 8; break;
            }
        }
        break;
    }
    }
}

static void encode_sources_segment_start(d9_collector *c);

/* Start a new stream when the writer moved to another file or lost bytes. */
void d9_col_open_stream(d9_collector *c) {
    d9_col_flush_out(c);
    c->epoch = d9_segw_epoch(c->w);
    c->room = d9_segw_room(c->w);
    c->stream_open = true;
    c->stream_no++;
    d9_enc_header(&c->out, &c->st);
    if (d9_segw_at_segment_start(c->w)) {
        d9_col_encode_preamble(c);
        /* Say which threads are workers, so each segment stands alone. */
        for (size_t i = 0; i < c->thread_count; i++) {
            d9_thread *t = c->threads[i];
            if (t->c_worker == 255) continue;
            uint32_t index = 0;
            const char *rt = d9_workers_describe(t->c_worker, &index);
            out_event e = {.schema = D9_SCH_WORKER_REGISTERED, .ts = c->now_ns,
                           .v = {t->c_worker, (uint64_t)t->tid, index}, .s = {rt ? rt : "?", t->name}};
            encode(c, &e);
        }
        encode_sources_segment_start(c);
        d9_col_encode_upload_loss(c, true);
    }
    if (c->write_drops_pending > c->write_drops_in_out) d9_col_emit_write_drop_report(c);
}


/* The event just encoded after `mark` overran the segment: write what came before, then see
 * whether the event fits after it, or rotate and encode it again in the next segment. */
__attribute__((noinline)) void d9_col_emit_overflow(d9_collector *c, const out_event *e, size_t mark) {
    d9_buf_clear(&c->scratch);
    d9_put_bytes(&c->scratch, c->out.data + mark, c->out.len - mark);
    c->out.len = mark;
    uint64_t epoch = d9_segw_epoch(c->w);
    d9_col_flush_out(c);
    bool same_stream = c->stream_open && d9_segw_epoch(c->w) == epoch;
    if (same_stream && c->scratch.len <= c->room) {
        d9_put_bytes(&c->out, c->scratch.data, c->scratch.len);
    } else {
        if (same_stream) {
            d9_segw_rotate(c->w);
            d9_col_writer_changed(c);
        }
        ensure_stream(c);
        encode(c, e);
    }
}

/* A new segment: each source adds what a reader of this segment alone needs. */
static void encode_sources_segment_start(d9_collector *c) {
    d9_src_batch_reset(&c->seg_batch);
    for (size_t i = 0; i < c->source_count; i++)
        if (c->sources[i]->segment_start) c->sources[i]->segment_start(c->sources[i], &c->seg_batch);
    for (size_t i = 0; i < c->seg_batch.count; i++) {
        out_event e;
        d9_col_source_event_to_out(c, &c->seg_batch.events[i], &e);
        if (e.ts < c->now_ns) e.ts = c->now_ns;
        encode(c, &e);
    }
}

/* The segments the disk budget deleted before they were uploaded, as the writer counts them
 * since the run began (docs/schemas.md): at every segment start once there is a loss, so
 * whichever segment reaches S3 says it, and in the current segment as soon as it grows. */
void d9_col_encode_upload_loss(d9_collector *c, bool segment_start) {
    if (!c->upload_loss_on) return;
    d9_segw_upload_loss l;
    d9_segw_get_upload_loss(c->w, &l);
    if (l.segments == 0 || (!segment_start && l.segments == c->upload_loss_written)) return;
    const char *run = strrchr(d9_segw_run_dir(c->w), '/');
    out_event e = {.schema = D9_SCH_UPLOAD_LOSS, .ts = c->now_ns,
                   .v = {l.segments, l.bytes, (uint64_t)l.first_start_ns, (uint64_t)l.last_end_ns},
                   .s = {run ? run + 1 : d9_segw_run_dir(c->w), "disk_budget"}};
    if (segment_start) encode(c, &e); /* part of the preamble */
    else emit(c, &e);
    c->upload_loss_written = l.segments;
}
