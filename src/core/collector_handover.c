/* Hand-over: the encoded bytes go to the segment writer, and what a failed write or a full
 * ring lost is accounted for exactly: reported in-band (DroppedEventsEvent) once written,
 * reported again when the write that carried the report failed, handed on when a thread exits,
 * and at stop written in a last segment of its own when the disk stayed full. */
#include "core/collector_encode.h"
#include "core/flight_rule_check.h"

#include <stdlib.h>

void d9_col_publish_writer_stats(d9_collector *c) {
    d9_segw_stats ws;
    d9_segw_get_stats(c->w, &ws);
    atomic_store(&c->st_bytes, ws.bytes_written);
    atomic_store(&c->st_write_errors, ws.write_errors);
    atomic_store(&c->st_sealed, ws.segments_sealed);
    atomic_store(&c->st_deleted, ws.files_deleted);
}

/* After any call that may have changed the writer (write, rotate): its room, and whether it
 * moved to another file or lost bytes (then the next event starts a new stream). Only this
 * thread changes the writer, so the hot path checks these copies instead of calling it. */
void d9_col_writer_changed(d9_collector *c) {
    c->room = d9_segw_room(c->w);
    if (d9_segw_epoch(c->w) != c->epoch) c->stream_open = false;
}

void d9_col_flush_out(d9_collector *c) {
    if (c->out.len == 0) return;
    /* After a failure, the rest of this drain is counted as lost without touching the disk,
     * so a full disk costs one failed write per drain, not one per buffer. */
    bool ok = !c->out.failed && !c->write_failed && d9_segw_write(c->w, c->out.data, c->out.len) == 0;
    /* Drop reports of threads are confirmed once written; a lost one is reported again. */
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        if (ok) t->c_drops_written = t->c_drops_reported;
        else t->c_drops_reported = t->c_drops_written;
    }
    if (ok && c->out_has_stacks) d9_segw_note_needs_symbols(c->w);
    c->out_has_stacks = false;
    if (ok) {
        atomic_fetch_add(&c->st_written, c->out_events);
        c->write_drops_pending -= c->write_drops_in_out;
    } else {
        /* A source's loss report that went down with the write is reported again (as part of
         * the write_error count, so the total stays exact; it is counted already). */
        c->write_drops_pending += c->out_events + c->src_lost_in_out;
        atomic_fetch_add(&c->st_write_dropped, c->out_events);
        c->stream_open = false; /* the writer bumped its epoch; make sure we notice */
        c->write_failed = true;
        if (c->meta_in_out) { /* the change it carried is said again, at the next drain */
            c->meta_version_written = ~c->meta.version;
            c->meta_written_ns = 0;
        }
    }
    c->meta_in_out = false;
    c->write_drops_in_out = 0;
    c->src_lost_in_out = 0;
    c->out_events = 0;
    d9_buf_clear(&c->out);
    d9_col_writer_changed(c);
}

void d9_col_emit_write_drop_report(d9_collector *c) {
    uint64_t n = c->write_drops_pending - c->write_drops_in_out;
    out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = c->now_ns, .v = {n, 0, 255},
                   .s = {"write_error"}};
    encode(c, &e);
    if (d9_rule_check_on()) d9_rule_check_drops(c->now_ns, n);
    c->write_drops_in_out += n;
}

void d9_col_report_ring_drops(d9_collector *c, d9_thread *t, uint64_t cumulative, uint64_t ts) {
    if (cumulative <= t->c_drops_reported) return;
    uint64_t n = cumulative - t->c_drops_reported;
    if (cumulative > t->c_drops_counted) {
        atomic_fetch_add(&c->st_ring_dropped, cumulative - t->c_drops_counted);
        t->c_drops_counted = cumulative;
    }
    t->c_drops_reported = cumulative;
    out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = ts, .v = {n, (uint64_t)t->tid, t->c_worker},
                   .s = {"buffer_full"}};
    emit(c, &e);
    if (d9_rule_check_on()) d9_rule_check_drops(ts, n);
}

static void report_exited_drops(d9_collector *c);
static void hand_over_exited_drops(d9_collector *c);

void d9_col_hand_over(d9_collector *c) {
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        atomic_store_explicit(&t->tail, t->c_end, memory_order_release);
        d9_thread_release_consumed(t, t->c_end);
        /* Drops the thread could not report itself yet (its ring stayed full). */
        d9_col_report_ring_drops(c, t, atomic_load_explicit(&t->drops_total, memory_order_relaxed), c->now_ns);
    }
    report_exited_drops(c);
    if (c->write_drops_pending > c->write_drops_in_out) {
        ensure_stream(c);
        if (c->write_drops_pending > c->write_drops_in_out) d9_col_emit_write_drop_report(c);
    }
    d9_col_flush_out(c); /* the drain's one write: every report above goes in it */
    hand_over_exited_drops(c);
    d9_col_publish_writer_stats(c);
    atomic_fetch_add_explicit(&c->st_recorded, c->recorded_in_drain, memory_order_relaxed);
    c->recorded_in_drain = 0;
    free(c->threads);
    c->threads = NULL;
    c->thread_count = 0;
    d9_threads_reap();
}

/* ---------------------------------------------------------------- the last words */

/* Drops an exited thread made after the drain read its count (between that read and its
 * exit): reported as its own buffer_full drops, before the drain's one write (not in a second
 * write of their own), so that hand_over_exited_drops hands on only what a failed write took. */
static void report_exited_drops(d9_collector *c) {
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        t->c_exit_seen = atomic_load_explicit(&t->exited, memory_order_acquire);
        if (!t->c_exit_seen) continue;
        uint64_t total = atomic_load_explicit(&t->drops_total, memory_order_relaxed); /* final */
        d9_col_report_ring_drops(c, t, total, c->now_ns); /* nothing when reported already */
    }
}

/* A thread about to be freed (exited, ring drained) whose drop report a failed write took:
 * its count goes on in the write_error count, so it is not lost with the thread. Only threads
 * whose exit report_exited_drops saw: one that exited during the write has its late drops
 * still unreported, not lost by a write; the next drain reports them as its own (reaping
 * waits for that), where reading `exited` again here put them in write_error. */
static void hand_over_exited_drops(d9_collector *c) {
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        if (!t->c_exit_seen) continue;
        uint64_t total = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        if (total <= t->c_drops_written) continue;
        c->write_drops_pending += total - t->c_drops_written;
        t->c_drops_reported = t->c_drops_written = total;
    }
}

/* Loss that no event in the trace reports yet: the writes that would have said so failed. */
static bool loss_unreported(d9_collector *c) {
    if (c->write_drops_pending > 0) return true;
    for (size_t i = 0; i < c->thread_count; i++)
        if (atomic_load_explicit(&c->threads[i]->drops_total, memory_order_relaxed) > c->threads[i]->c_drops_written)
            return true;
    return false;
}

/* At stop, when the disk stayed full to the end: one last segment, alone (metadata, clock
 * sync, the drop reports), written into the room the writer set aside for it, so the trace
 * says what it lost. */
void d9_col_write_final_accounting(d9_collector *c) {
    c->threads = d9_threads_snapshot(&c->thread_count);
    if (!c->threads) c->thread_count = 0;
    if (!loss_unreported(c) || !d9_segw_has_final_reserve(c->w)) return;
    d9_buf_clear(&c->out);
    c->out_has_stacks = false;
    c->out_events = 0;
    c->stream_no++; /* every schema and string again: a stream of its own */
    d9_enc_header(&c->out, &c->st);
    d9_col_encode_preamble(c);
    uint64_t *reported = calloc(c->thread_count ? c->thread_count : 1, sizeof *reported);
    if (!reported) return;
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        uint64_t total = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        reported[i] = total;
        if (total <= t->c_drops_written) continue;
        out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = c->now_ns,
                       .v = {total - t->c_drops_written, (uint64_t)t->tid, t->c_worker}, .s = {"buffer_full"}};
        encode(c, &e);
    }
    if (c->write_drops_pending > 0) {
        out_event e = {.schema = D9_SCH_DROPPED_EVENTS, .ts = c->now_ns, .v = {c->write_drops_pending, 0, 255},
                       .s = {"write_error"}};
        encode(c, &e);
    }
    if (!c->out.failed && d9_segw_write_final(c->w, c->out.data, c->out.len) == 0) {
        for (size_t i = 0; i < c->thread_count; i++)
            c->threads[i]->c_drops_reported = c->threads[i]->c_drops_written = reported[i];
        c->write_drops_pending = 0;
    }
    free(reported);
    d9_buf_clear(&c->out);
    c->stream_open = false;
}

void d9_collector_get_stats(d9_collector *c, d9_stats *out) {
    out->events_recorded = atomic_load(&c->st_recorded);
    out->events_written = atomic_load(&c->st_written);
    out->events_dropped = atomic_load(&c->st_ring_dropped) + atomic_load(&c->st_write_dropped);
    out->bytes_written = atomic_load(&c->st_bytes);
    out->write_errors = atomic_load(&c->st_write_errors);
    out->segments_sealed = atomic_load(&c->st_sealed);
    out->files_deleted = atomic_load(&c->st_deleted);
    out->threads = atomic_load(&c->st_threads);
    out->buffer_bytes = d9_ring_bytes_used();
    out->buffer_bytes_peak = d9_ring_bytes_peak();
}
