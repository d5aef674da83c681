/* Helpers of the tests that record hooks' events and check each decoded event against what the
 * program did (test_recorder_*_records.c, test_recorder_unpark_wake.c,
 * test_recorder_poll_end_begin.c): their configurations, the stop that must have dropped
 * nothing, and the expected-vs-decoded event lists. Header-only. */
#ifndef D9_TESTS_RECORDER_RECORDS_UTIL_H
#define D9_TESTS_RECORDER_RECORDS_UTIL_H

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

/* Long runs in small segments: several segments (runs meet a segment's end), a buffer that
 * always holds what is recorded between two flushes, every park and unpark's schedstat read,
 * nothing but the hooks' own events. */
static inline void rr_config_segments(d9_config *cfg, char *dir) {
    d9_config_init(cfg);
    cfg->trace_dir = dir;
    cfg->max_file_size = 300 * 1024;
    cfg->buffer_kb = 4096;
    cfg->schedstat_resolution_us = 0;
    cfg->cpu_profile = false;
    cfg->schedule_profile = false;
}

/* The hooks' events alone: no switch records, task dumps or symbolizer beside them. */
static inline void rr_config_hooks_only(d9_config *cfg, char *dir) {
    d9_config_init(cfg);
    cfg->trace_dir = dir;
    cfg->schedule_profile = false;
    cfg->task_dumps = false;
    cfg->symbolize = false;
}

/* d9_stop, then every event made must have been recorded: each one is checked. */
static inline void rr_stop_nothing_dropped(void) {
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    CHECK_EQ_U64(st.events_dropped, 0);
}

/* One event, as a kind letter and up to four values (the test says which). */
typedef struct rr_event {
    char kind;
    uint64_t a, b, c, d;
} rr_event;

typedef struct rr_events {
    rr_event *ev;
    size_t n, cap;
} rr_events;

static inline void rr_add(rr_events *s, char kind, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->ev = realloc(s->ev, s->cap * sizeof *s->ev);
    }
    s->ev[s->n++] = (rr_event){kind, a, b, c, d};
}

/* How many of the events both lists have differ, in order; the first that does said on stderr. */
static inline size_t rr_differences(const rr_events *got, const rr_events *want) {
    size_t first_bad = SIZE_MAX, bad = 0;
    for (size_t i = 0; i < got->n && i < want->n; i++) {
        const rr_event *g = &got->ev[i], *w = &want->ev[i];
        if (g->kind != w->kind || g->a != w->a || g->b != w->b || g->c != w->c || g->d != w->d) {
            if (first_bad == SIZE_MAX) first_bad = i;
            bad++;
        }
    }
    if (bad) {
        const rr_event *g = &got->ev[first_bad], *w = &want->ev[first_bad];
        fprintf(stderr, "event %zu: got %c %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ", want %c %" PRIu64
                " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", first_bad, g->kind, g->a, g->b, g->c, g->d, w->kind, w->a,
                w->b, w->c, w->d);
    }
    return bad;
}

/* One worker's hook events as decoded, in stream order: parks (P), unparks (U), wakes aimed at
 * it (W), polls' starts (S) and ends (E), with every value the tests compare (what a kind does
 * not have stays 0). Needs trace_files_util.h (d9t_is, d9t_field_u). */
typedef struct rr_hook_event {
    char kind;
    uint64_t ts, worker, queue, cpu, tid, task, loc, waker, woken;
} rr_hook_event;

typedef struct rr_hook_events {
    rr_hook_event *r;
    size_t n, cap;
    uint64_t worker; /* the recording thread's worker id: its events only */
} rr_hook_events;

static inline void rr_on_hook_event(const d9_event *ev, void *ctx) {
    rr_hook_events *s = ctx;
    rr_hook_event r = {0};
    if (d9t_is(ev, "WorkerParkEvent") || d9t_is(ev, "WorkerUnparkEvent")) {
        r.kind = d9t_is(ev, "WorkerParkEvent") ? 'P' : 'U';
        r.worker = d9t_field_u(ev, "worker_id");
        r.queue = d9t_field_u(ev, "local_queue");
        r.cpu = d9t_field_u(ev, "cpu_time_ns");
        r.tid = d9t_field_u(ev, "tid");
    } else if (d9t_is(ev, "WakeEventEvent")) {
        r.kind = 'W';
        r.worker = d9t_field_u(ev, "target_worker");
        r.waker = d9t_field_u(ev, "waker_task_id");
        r.woken = d9t_field_u(ev, "woken_task_id");
    } else if (d9t_is(ev, "PollStartEvent")) {
        r.kind = 'S';
        r.worker = d9t_field_u(ev, "worker_id");
        r.queue = d9t_field_u(ev, "local_queue");
        r.task = d9t_field_u(ev, "task_id");
        r.loc = d9t_field_u(ev, "spawn_loc");
    } else if (d9t_is(ev, "PollEndEvent")) {
        r.kind = 'E';
        r.worker = d9t_field_u(ev, "worker_id");
    } else {
        return;
    }
    if (r.worker != s->worker) return;
    r.ts = ev->ts_ns;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
    }
    s->r[s->n++] = r;
}

/* One worker's loop recorded and read back: `thread` runs on a thread of its own with the
 * hooks' events alone (rr_config_hooks_only) on `clock` and DIAL9_THREAD_CPU=thread_cpu, and
 * stores its worker id in *worker; the stop must have dropped nothing; that worker's events
 * land in *s. The trace's directory goes in the hands of the caller (d9t_rm_rf, free). */
static inline char *rr_record_hook_thread(const char *tag, d9_clock_mode clock, const char *thread_cpu,
                                          void *(*thread)(void *), const uint32_t *worker, rr_hook_events *s) {
    setenv("DIAL9_THREAD_CPU", thread_cpu, 1);
    char *dir = d9t_mkdtemp(tag);
    d9_config cfg;
    rr_config_hooks_only(&cfg, dir);
    cfg.clock = clock;
    CHECK(d9_start(&cfg) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, thread, NULL) == 0);
    pthread_join(th, NULL);
    rr_stop_nothing_dropped();
    *s = (rr_hook_events){.worker = *worker};
    CHECK(d9t_decode_run(d9_run_dir(), rr_on_hook_event, s) == 0);
    return dir;
}

#endif
