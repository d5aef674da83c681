/* Building small traces by hand for the analysis tests (src/format/encoder.h with the schemas
 * of src/format/schemas.h), and running an analysis over them. */
#ifndef D9_TESTS_ANALYSIS_BUILDER_H
#define D9_TESTS_ANALYSIS_BUILDER_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "format/decoder.h"
#include "format/encoder.h"
#include "format/schemas.h"
#include "test_dial9_park_schemas.h"

#define MS 1000000ull
#define US 1000ull

typedef struct tb {
    d9_buf b;
    d9_stream_state st;
    uint32_t next_pool; /* pool ids are per stream */
    bool dial9_parks;   /* this stream declares parks as dial9 does (0 = not measured) */
} tb;

/* A new stream: header and the built-in schemas the shared vectors were written with (up to
 * UploadLossEvent: later additions leave the vectors' bytes as they are) under their enum
 * values as type ids; parks and
 * unparks with dial9's layout (ours now, 0 = not measured) when `dial9_parks`, else with the
 * optional layout this recorder wrote for a while (absent = not measured). */
static inline void tb_stream_with(tb *t, bool dial9_parks) {
    d9_enc_header(&t->b, &t->st);
    t->next_pool = 1;
    t->dial9_parks = dial9_parks;
    /* the schemas up to UploadLossEvent: the checked-in vectors hold those bytes (a trace with
     * spans or heap samples declares theirs, as test_analysis_spans does) */
    for (uint16_t i = 0; i <= D9_SCH_UPLOAD_LOSS; i++) {
        const d9_schema_def *def = &d9_builtin_schemas[i];
        if (i == D9_SCH_WORKER_PARK || i == D9_SCH_WORKER_UNPARK)
            def = d9_test_park_schema(dial9_parks, i == D9_SCH_WORKER_UNPARK);
        d9_enc_schema(&t->b, i, def);
    }
}
static inline void tb_stream(tb *t) { tb_stream_with(t, false); }
static inline void tb_stream_dial9_parks(tb *t) { tb_stream_with(t, true); }

static inline uint32_t tb_string(tb *t, const char *s) {
    d9_pool_frame pf;
    uint32_t id = t->next_pool++;
    d9_enc_string_pool_begin(&t->b, &pf);
    d9_enc_string_pool_entry(&t->b, &pf, id, s, strlen(s));
    d9_enc_pool_end(&t->b, &pf);
    return id;
}

static inline uint32_t tb_stack(tb *t, const uint64_t *addrs, uint32_t n) {
    d9_pool_frame pf;
    uint32_t id = t->next_pool++;
    d9_enc_stack_pool_begin(&t->b, &pf);
    d9_enc_stack_pool_entry(&t->b, &pf, id, addrs, n);
    d9_enc_pool_end(&t->b, &pf);
    return id;
}

static inline void tb_poll_start(tb *t, uint64_t ts, uint64_t worker, uint8_t lq, uint64_t task,
                                 uint32_t loc) {
    d9_enc_event(&t->b, &t->st, D9_SCH_POLL_START, ts);
    d9_put_varint(&t->b, worker);
    d9_put_u8(&t->b, lq);
    d9_put_varint(&t->b, task);
    d9_put_u32(&t->b, loc);
}

static inline void tb_poll_end(tb *t, uint64_t ts, uint64_t worker) {
    d9_enc_event(&t->b, &t->st, D9_SCH_POLL_END, ts);
    d9_put_varint(&t->b, worker);
}

static inline void tb_poll(tb *t, uint64_t ts, uint64_t dur, uint64_t worker, uint8_t lq,
                           uint64_t task, uint32_t loc) {
    tb_poll_start(t, ts, worker, lq, task, loc);
    tb_poll_end(t, ts + dur, worker);
}

static inline void tb_park(tb *t, uint64_t ts, uint64_t worker, uint64_t cpu, uint32_t tid) {
    d9_enc_event(&t->b, &t->st, D9_SCH_WORKER_PARK, ts);
    d9_put_varint(&t->b, worker);
    d9_put_u8(&t->b, 0);
    d9_test_put_ns(&t->b, t->dial9_parks, cpu);
    d9_put_u32(&t->b, tid);
}

static inline void tb_unpark(tb *t, uint64_t ts, uint64_t worker, uint64_t cpu, uint64_t wait,
                             uint32_t tid) {
    d9_enc_event(&t->b, &t->st, D9_SCH_WORKER_UNPARK, ts);
    d9_put_varint(&t->b, worker);
    d9_put_u8(&t->b, 0);
    d9_test_put_ns(&t->b, t->dial9_parks, cpu);
    d9_test_put_ns(&t->b, t->dial9_parks, wait);
    d9_put_u32(&t->b, tid);
}

static inline void tb_wake(tb *t, uint64_t ts, uint64_t waker, uint64_t woken, uint8_t target) {
    d9_enc_event(&t->b, &t->st, D9_SCH_WAKE, ts);
    d9_put_varint(&t->b, waker);
    d9_put_varint(&t->b, woken);
    d9_put_u8(&t->b, target);
}

static inline void tb_spawn(tb *t, uint64_t ts, uint64_t task, uint32_t loc) {
    d9_enc_event(&t->b, &t->st, D9_SCH_TASK_SPAWN, ts);
    d9_put_varint(&t->b, task);
    d9_put_u32(&t->b, loc);
    d9_put_u8(&t->b, 0);
}

static inline void tb_terminate(tb *t, uint64_t ts, uint64_t task) {
    d9_enc_event(&t->b, &t->st, D9_SCH_TASK_TERMINATE, ts);
    d9_put_varint(&t->b, task);
}

/* source 0 = CPU sample, 1 = context switch (off-CPU) */
static inline void tb_sample(tb *t, uint64_t ts, uint64_t worker, uint32_t tid, uint8_t source,
                             uint32_t stack) {
    d9_enc_event(&t->b, &t->st, D9_SCH_CPU_SAMPLE, ts);
    d9_put_varint(&t->b, worker);
    d9_put_u32(&t->b, tid);
    d9_put_u8(&t->b, source);
    d9_put_u8(&t->b, 0); /* thread_name absent */
    d9_put_u32(&t->b, stack);
    d9_put_u8(&t->b, 0); /* cpu absent */
}

static inline void tb_drops(tb *t, uint64_t ts, uint64_t count, uint32_t reason, uint32_t tid,
                            uint64_t worker) {
    d9_enc_event(&t->b, &t->st, D9_SCH_DROPPED_EVENTS, ts);
    d9_put_varint(&t->b, count);
    d9_put_u32(&t->b, reason);
    d9_put_u32(&t->b, tid);
    d9_put_varint(&t->b, worker);
}

/* SymbolTableEntry, written with timestamp 0 as dial9 does */
static inline void tb_symbol(tb *t, uint64_t addr, uint64_t size, const char *name, uint64_t depth,
                             const char *file, uint64_t line) {
    uint32_t n = tb_string(t, name), f = tb_string(t, file);
    d9_enc_event(&t->b, &t->st, D9_SCH_SYMBOL_TABLE_ENTRY, 0);
    d9_put_varint(&t->b, addr);
    d9_put_varint(&t->b, size);
    d9_put_u32(&t->b, n);
    d9_put_varint(&t->b, depth);
    d9_put_u32(&t->b, f);
    d9_put_varint(&t->b, line);
}

static inline void tb_queue(tb *t, uint64_t ts, uint8_t q) {
    d9_enc_event(&t->b, &t->st, D9_SCH_QUEUE_SAMPLE, ts);
    d9_put_u8(&t->b, q);
}

static inline void tb_switch(tb *t, uint64_t ts, uint32_t tid, uint64_t worker, bool out,
                             bool preempted) {
    d9_enc_event(&t->b, &t->st, D9_SCH_SCHED_SWITCH, ts);
    d9_put_u32(&t->b, tid);
    d9_put_varint(&t->b, worker);
    d9_put_u8(&t->b, out);
    d9_put_u8(&t->b, preempted);
    d9_put_u8(&t->b, 0); /* cpu absent */
}

/* SegmentMetadataEvent with key/value pairs (NULL-terminated list) */
static inline void tb_metadata(tb *t, uint64_t ts, const char *const *kv) {
    d9_enc_event(&t->b, &t->st, D9_SCH_SEGMENT_METADATA, ts);
    d9_pool_frame map;
    d9_enc_string_map_begin(&t->b, &map);
    for (; kv[0] && kv[1]; kv += 2) d9_enc_string_map_entry(&t->b, &map, kv[0], kv[1]);
    d9_enc_string_map_end(&t->b, &map);
}

/* Analyze the buffers bufs[0..n) as n files. The report lives until d9a_free(*out). */
/* The trace as the file at path (the buffer freed); 0, or -1 when building or writing failed. */
static inline int tb_write_file(tb *t, const char *path) {
    bool built = !t->b.failed;
    FILE *f = built ? fopen(path, "wb") : NULL;
    bool ok = f && fwrite(t->b.data, 1, t->b.len, f) == t->b.len;
    if (f && fclose(f) != 0) ok = false;
    free(t->b.data);
    t->b.data = NULL;
    return ok ? 0 : -1;
}

static inline const d9a_report *tb_analyze_files(d9a_analysis **out, tb *const *bufs, size_t n,
                                                 const d9a_options *opt) {
    d9a_analysis *a = d9a_new(opt);
    *out = a;
    if (!a) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (bufs[i]->b.failed) return NULL;
        char err[256];
        d9_decoder *d = d9_dec_open_mem(bufs[i]->b.data, bufs[i]->b.len, NULL, err, sizeof err);
        if (!d) return NULL;
        d9a_begin_file(a);
        d9_event ev;
        while (d9_dec_next(d, &ev) > 0)
            if (d9a_feed(a, &ev, d) != 0) break;
        bool ok = d9_dec_state(d) == D9_DEC_END;
        if (!ok) fprintf(stderr, "decode: %s\n", d9_dec_message(d));
        d9_dec_close(d);
        if (!ok) return NULL;
    }
    return d9a_finish(a);
}

static inline const d9a_report *tb_analyze(d9a_analysis **out, tb *t, const d9a_options *opt) {
    tb *one[1] = {t};
    return tb_analyze_files(out, one, 1, opt);
}

static inline const d9a_flag *tb_flag(const d9a_report *r, const char *code) {
    for (size_t i = 0; r && i < r->nflags; i++)
        if (!strcmp(r->flags[i].code, code)) return &r->flags[i];
    return NULL;
}

#endif
