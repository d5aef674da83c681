/* The collector's lifecycle (open, first preamble, close) and the outline of one drain; the
 * work is in collector_merge.c, collector_encode.c and collector_handover.c
 * (collector_state.h says which does what). */
#include "core/collector_encode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/pause_ends.h"
#include "core/schedstat.h"
#include "core/thread_cpu_clock.h"
#include "core/workers.h"

bool d9_collector_add_source(d9_collector *c, d9_source *s) {
    if (c->source_count == MAX_SOURCES) return false;
    c->sources[c->source_count++] = s;
    return true;
}

double d9_collector_drain(d9_collector *c) {
    c->write_failed = false;
    c->now_ticks = d9_clock_map_sample(&c->clock).ticks;
    c->now_ns = d9_clock_map_to_ns(&c->clock, c->now_ticks);
    if (c->clock.slope_long > 0 && __atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED)) {
        __atomic_store_n(&d9_schedstat_min_ticks, (uint64_t)((double)c->schedstat_res_ns / c->clock.slope_long),
                         __ATOMIC_RELAXED);
        d9_thread_cpu_clock_set_ns_per_tick(c->clock.slope_long); /* the parks' wall time, ticks -> ns */
    }
    if (!d9_col_refresh_threads(c)) return 1.0;
    atomic_store(&c->st_threads, (uint32_t)c->thread_count);

    if (d9_segw_rotation_due(c->w, d9_mono_ns())) {
        d9_col_flush_out(c);
        d9_segw_rotate(c->w);
        d9_col_writer_changed(c);
    }
    d9_col_encode_upload_loss(c, false); /* deletions during the last drain's writes */
    double fullest = d9_col_merge(c);
    /* after the sources' collect, which change it (the governor's notes); the run's last drain
     * writes it whatever the time, so the last segment says how the run ended */
    d9_col_encode_metadata_change(c, !c->hold_new_threads);
    d9_pause_ends_settle(c->threads, c->thread_count); /* before the hand-over frees the list */
    d9_col_hand_over(c);
    return fullest;
}

/* ---------------------------------------------------------------- lifecycle */

d9_collector *d9_collector_open(const d9_collector_config *cc, char *err, size_t errlen) {
    d9_collector *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    const d9_config *cfg = cc->cfg;
    d9_segw_config sc = {
        .trace_dir = cfg->trace_dir,
        .run_id = cc->run_id,
        .max_file_size = cfg->max_file_size,
        .max_total_size = cfg->max_total_size,
        .rotation_ns = (uint64_t)cfg->rotation_secs * 1000000000ull,
        .memory = cc->memory,
    };
    if (cc->memory) { /* flight recorder: short segments, each within its memory budget */
        sc.rotation_ns = cc->memory_segment_ns;
        if (cc->memory_segment_bytes && cc->memory_segment_bytes < sc.max_file_size) sc.max_file_size = cc->memory_segment_bytes;
    }
    c->w = d9_segw_open(&sc, err, errlen);
    if (!c->w) {
        free(c);
        return NULL;
    }
    /* Room for the drop accounting at stop when the disk is full to the end: metadata, clock
     * sync and a report per thread take a few KB. */
    d9_segw_set_final_reserve(c->w, FINAL_RESERVE_BYTES);
    c->upload_loss_on = cfg->s3_bucket != NULL;
    d9_segw_set_count_upload_loss(c->w, c->upload_loss_on);
    d9_buf_init(&c->out);
    /* At its full size at once (its pages are touched as they are written): grown by doubling as
     * drains filled it, it was copied by realloc up to 7 times, past FLUSH_BYTES whenever a drain
     * wrote that much, and a counted run's instructions depended on whether one had. */
    if (!d9_buf_grow(&c->out, 2 * FLUSH_BYTES)) d9_buf_clear(&c->out); /* grows later, or fails then */
    d9_buf_init(&c->scratch);
    c->meta_rewrite_ns = META_REWRITE_NS;
    d9_run_metadata_describe_process(&c->meta, cc->service, cc->run_id);
    d9_run_metadata_set(&c->meta, "clock", "%s", cc->clock_name);
    d9_run_metadata_set(&c->meta, "sources", "polls,parks,wakes,tasks");
    char resolution[64];
    snprintf(resolution, sizeof resolution, "read at most every %u us per thread", cfg->schedstat_resolution_us);
    d9_collector_note_source(c, "schedstat", cc->schedstat_active,
                             cc->schedstat_active ? resolution
                             : cfg->schedstat     ? "/proc/thread-self/schedstat cannot be read"
                                                  : "disabled by configuration");
    /* when parks and unparks read cpu_time_ns (thread_cpu_time.h): "off" says their 0 is not
     * measured, "park" that an unpark's is its park's */
    static const char *const cpu_modes[] = {"park", "every", "off"};
    d9_run_metadata_set(&c->meta, "thread_cpu_time", "%s",
                        (unsigned)cfg->thread_cpu_time < 3 ? cpu_modes[cfg->thread_cpu_time] : "park");
    d9_run_metadata_set(&c->meta, "buffer_kb", "%u", cfg->buffer_kb);

    d9_clock_map_init(&c->clock);
    c->hold_new_threads = true;
    c->schedstat_res_ns = (uint64_t)cfg->schedstat_resolution_us * 1000u;
    c->now_ticks = c->clock.first.ticks;
    c->now_ns = c->clock.first.mono_ns;
    return c;
}

int d9_collector_start(d9_collector *c, char *err, size_t errlen) {
    /* Records left in rings by hooks racing the previous d9_stop belong to no run: skip them.
     * Threads that became workers before this start are workers from the first segment on. */
    c->threads = d9_threads_snapshot(&c->thread_count);
    for (size_t i = 0; c->threads && i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        uint64_t head = atomic_load_explicit(&t->head_pub, memory_order_acquire);
        atomic_store_explicit(&t->tail, head, memory_order_release);
        d9_thread_release_consumed(t, head);
        t->c_worker = atomic_load_explicit(&t->worker_id, memory_order_acquire);
        t->c_task = 0;
        t->c_ss_wait = D9_NS_UNKNOWN;
        uint64_t drops = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        t->c_drops_reported = t->c_drops_written = t->c_drops_counted = drops; /* earlier runs' */
    }
    /* Write the first preamble now (with those workers): an unwritable directory is the
     * caller's error, not a silent loss later. */
    ensure_stream(c);
    d9_col_flush_out(c);
    free(c->threads);
    c->threads = NULL;
    c->thread_count = 0;
    d9_col_publish_writer_stats(c);
    d9_segw_stats ws;
    d9_segw_get_stats(c->w, &ws);
    if (ws.write_errors && (ws.last_write_errno == ENOSPC || ws.last_write_errno == EDQUOT)) {
        /* A full disk may free up: record on, the writes lost meanwhile counted (and written
         * into the trace as drops once there is room), as for a disk that fills later. */
        fprintf(stderr, "dial9: cannot write trace files in %s at start: %s; recording goes on and writes "
                        "again once there is room (what is lost meanwhile is counted)\n",
                d9_segw_run_dir(c->w), strerror(ws.last_write_errno));
        snprintf(err, errlen, "cannot write trace files in %s at start: %s (recording goes on)", d9_segw_run_dir(c->w),
                 strerror(ws.last_write_errno));
        return 0;
    }
    if (ws.write_errors) {
        snprintf(err, errlen, "cannot write trace files in %s: %s", d9_segw_run_dir(c->w),
                 ws.last_write_errno ? strerror(ws.last_write_errno) : "no room within DIAL9_MAX_DISK_USAGE_MB");
        return -1;
    }
    return 0;
}

d9_run_metadata *d9_collector_metadata(d9_collector *c) { return &c->meta; }

/* Whether the comma-separated `list` holds `name`. */
static bool list_has(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return true;
    return false;
}

void d9_collector_note_source(d9_collector *c, const char *name, bool active, const char *detail) {
    char key[128];
    snprintf(key, sizeof key, "source.%s", name);
    d9_run_metadata_set(&c->meta, key, "%s%s%s", active ? "active" : "inactive",
                        detail && *detail ? ": " : "", detail ? detail : "");
    if (!active) return;
    for (int i = 0; i < c->meta.count; i++) {
        if (strcmp(c->meta.keys[i], "sources") != 0) continue;
        char *list = c->meta.vals[i];
        if (list_has(list, name)) return; /* noted again (a source restated): listed once */
        d9_run_metadata_set(&c->meta, "sources", "%s,%s", list, name);
        return;
    }
    d9_run_metadata_set(&c->meta, "sources", "%s", name);
}

void d9_collector_set_on_sealed(d9_collector *c, d9_segw_sealed_fn fn, void *ctx) {
    d9_segw_set_on_sealed(c->w, fn, ctx);
}

void d9_collector_note_resized(d9_collector *c, const char *path, uint64_t new_size) {
    d9_segw_note_resized(c->w, path, new_size);
}

void d9_collector_expect_growth(d9_collector *c, uint64_t bytes) { d9_segw_set_growth_reserve(c->w, bytes); }

void d9_collector_collect_symbols(d9_collector *c) {
    c->list_symbols = true;
    d9_segw_collect_symbols(c->w);
}

void d9_collector_close(d9_collector *c, d9_stats *final_stats) {
    if (!c) return;
    c->hold_new_threads = false; /* the last drain writes every source event */
    d9_collector_drain(c);
    for (size_t i = 0; i < c->source_count; i++) c->sources[i]->close(c->sources[i]);
    c->source_count = 0;
    d9_col_encode_metadata_change(c, true); /* what the sources said as they closed */
    d9_col_flush_out(c);
    /* segments the last writes' budget deleted: said in this last segment (a deletion during
     * that write is said by the next round) */
    for (int round = 0; round < 3; round++) {
        d9_col_encode_upload_loss(c, false);
        d9_col_flush_out(c);
    }
    d9_col_write_final_accounting(c);
    bool last_has_bytes = !d9_segw_at_segment_start(c->w);
    d9_col_publish_writer_stats(c);
    if (final_stats) {
        d9_collector_get_stats(c, final_stats);
        if (last_has_bytes) final_stats->segments_sealed++; /* sealed by the close below */
    }
    d9_segw_close(c->w);
    d9_run_metadata_free(&c->meta);
    d9_string_table_free(&c->strings);
    d9_stack_table_free(&c->stacks);
    d9_src_batch_free(&c->batch);
    d9_src_batch_free(&c->held);
    d9_src_batch_free(&c->seg_batch);
    d9_buf_free(&c->out);
    d9_buf_free(&c->scratch);
    free(c->loc_mark);
    free(c->cursors);
    free(c->threads);
    free(c);
}

const char *d9_collector_run_dir(d9_collector *c) { return d9_segw_run_dir(c->w); }

int d9_collector_run_dir_fd(d9_collector *c) { return d9_segw_run_dir_fd(c->w); }

void d9_collector_set_dump_unwinder(d9_collector *c, d9_dump_unwind_fn fn) { c->dump_unwind = fn; }

void d9_collector_set_on_flight(d9_collector *c, d9_segw_flight_fn fn, void *ctx) { d9_segw_set_on_flight(c->w, fn, ctx); }

void d9_collector_request_seal(d9_collector *c, uint64_t at_mono_ns) { d9_segw_request_seal(c->w, at_mono_ns); }

uint64_t d9_collector_open_since(d9_collector *c) { return d9_segw_open_since(c->w); }
