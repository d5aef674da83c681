/* The hooks' events as the collector writes them, field by field, in long runs: polls (task
 * ids of one and of eight varint bytes, a local queue past 255 that saturates), wakes from a
 * task and from the poller, parks and unparks, spawns (with the object a task stands for: two
 * events from one record, and without), terminations, with pauses longer than a 24-bit
 * timestamp delta and segments small enough that runs end at a segment's end. The collector
 * encodes these records on its fast path (collector_merge.c, take_fast) and falls back to the
 * general one at every such edge; either way each event must decode to what was recorded, in
 * order, with its location string declared again in every segment (two poll locations). */
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "recorder_records_util.h"
#include "trace_files_util.h"

#define ITERATIONS 40000

/* events: S poll start, E poll end, W wake, P park, U unpark, N spawn, O its object, T terminate */
typedef struct seen {
    rr_events events;
    int loc_bad, tid_bad, segments;
} seen;

static void add(seen *s, char kind, uint64_t a, uint64_t b, uint64_t c) { rr_add(&s->events, kind, a, b, c, 0); }

static uint64_t task_of(int i) { return i % 3 == 0 ? (1ull << 60) + (uint64_t)i : (uint64_t)i + 1; }

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    const char *name = ev->schema->name;
    if (!strcmp(name, "SegmentMetadataEvent")) s->segments++;
    bool poll = !strcmp(name, "PollStartEvent"), end = !strcmp(name, "PollEndEvent");
    bool park = !strcmp(name, "WorkerParkEvent"), unpark = !strcmp(name, "WorkerUnparkEvent");
    uint64_t worker = poll || end || park || unpark ? d9t_field_u(ev, "worker_id") : 0;
    if (park || unpark) s->tid_bad += d9t_field_u(ev, "tid") != (uint64_t)gettid();
    if (poll) {
        d9_dec_str loc;
        if (!d9_value_str(d9_event_field(ev, "spawn_loc"), &loc) ||
            !memmem(loc.ptr, loc.len, "test_recorder_hook_records.c:", 29))
            s->loc_bad++;
        add(s, 'S', d9t_field_u(ev, "task_id"), d9t_field_u(ev, "local_queue"), worker);
    } else if (end) {
        add(s, 'E', worker, 0, 0);
    } else if (!strcmp(name, "WakeEventEvent")) {
        add(s, 'W', d9t_field_u(ev, "waker_task_id"), d9t_field_u(ev, "woken_task_id"),
            d9t_field_u(ev, "target_worker"));
    } else if (park || unpark) {
        add(s, park ? 'P' : 'U', d9t_field_u(ev, "local_queue"), worker, 0);
    } else if (!strcmp(name, "TaskSpawnEvent")) {
        d9_dec_str loc;
        if (!d9_value_str(d9_event_field(ev, "spawn_loc"), &loc) ||
            !memmem(loc.ptr, loc.len, "test_recorder_hook_records.c:", 29))
            s->loc_bad++;
        add(s, 'N', d9t_field_u(ev, "task_id"), d9t_field_u(ev, "instrumented"), 0);
    } else if (!strcmp(name, "TaskObjectEvent")) {
        add(s, 'O', d9t_field_u(ev, "task_id"), d9t_field_u(ev, "object"), 0);
    } else if (!strcmp(name, "TaskTerminateEvent")) {
        add(s, 'T', d9t_field_u(ev, "task_id"), 0, 0);
    }
}

int main(void) {
    char *dir = d9t_mkdtemp("hookrec");
    d9_config cfg;
    rr_config_segments(&cfg, dir); /* several segments: runs meet a segment's end */
    CHECK(d9_start(&cfg) == 0);
    seen want = {0};
    uint32_t worker = d9_worker_begin("hooks", 0);
    /* The second half as a worker whose id takes two varint bytes (>= 128): the collector's
     * fast path writes the worker's bytes made per run, one byte in its steady copy
     * (collector_merge.c), two otherwise. */
    for (uint32_t j = 0; j < 130; j++) (void)d9_worker_begin("padding", j);
    const uint32_t worker_late = d9_worker_begin("hooks", 1);
    CHECK(worker_late >= 128 && worker_late < 254);
    CHECK_EQ_U64(d9_worker_begin("hooks", 0), worker);
    const d9_loc *where = D9_HERE, *spawned_at = D9_HERE;
    /* a second poll location, its first use in a segment after the poll's schema is written
     * there: the fast path's test of the locations a stream holds (collector_encode.c's
     * prefix) must see it is not */
    const d9_loc *where_too = D9_HERE;
    for (int i = 0; i < ITERATIONS; i++) {
        uint64_t task = task_of(i), queue = (uint64_t)(i % 300);
        if (i == ITERATIONS / 2) worker = d9_worker_begin("hooks", 1);
        if (i % 3) {
            /* objects of one and of ten varint bytes */
            uint64_t object = i % 3 == 1 ? (uint64_t)(i & 0x7f) + 1 : (1ull << 63) + (uint64_t)i;
            d9_task_spawn_object(task, spawned_at, (const void *)(uintptr_t)object);
            add(&want, 'N', task, 1, 0);
            add(&want, 'O', task, object, 0);
        } else {
            d9_task_spawn(task, spawned_at);
            add(&want, 'N', task, 1, 0);
        }
        d9_set_local_queue((uint32_t)queue);
        d9_poll_begin(task, i % 5 == 4 ? where_too : where);
        add(&want, 'S', task, queue > 255 ? 255 : queue, worker);
        d9_wake((uint64_t)i * 7 + 1);
        add(&want, 'W', task, (uint64_t)i * 7 + 1, worker);
        d9_wake_ready((uint64_t)i + 5);
        add(&want, 'W', 0, (uint64_t)i + 5, worker);
        d9_poll_end();
        add(&want, 'E', worker, 0, 0);
        if (i % 16 == 0) {
            d9_park();
            add(&want, 'P', queue > 255 ? 255 : queue, worker, 0);
            d9_unpark();
            add(&want, 'U', queue > 255 ? 255 : queue, worker, 0);
        }
        d9_task_terminate(task);
        add(&want, 'T', task, 0, 0);
        if (i % 8000 == 7999) { /* longer than a 24-bit delta (16.7 ms): a timestamp reset */
            struct timespec nap = {0, 20 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        if (i % 2000 == 1999) d9_flush();
    }
    d9_worker_end();
    rr_stop_nothing_dropped();

    seen got = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &got) == 0);
    CHECK(got.segments >= 3);
    CHECK_EQ_U64(got.events.n, want.events.n);
    size_t bad = rr_differences(&got.events, &want.events);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(got.loc_bad, 0);
    CHECK_EQ_U64(got.tid_bad, 0);
    printf("hook_records: %zu events in %d segments\n", got.events.n, got.segments);
    free(got.events.ev);
    free(want.events.ev);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_hook_records");
}
