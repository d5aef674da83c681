/* Spans as the collector writes them, field by field, among the other hooks' events in long
 * runs: span ids of one and of ten varint bytes, names first used in the middle of a run (their
 * pool string then written before the event), spans inside a poll (the poll's task) and outside
 * one (task 0), an end in another poll than its begin, a thread while it is a worker and after
 * (worker 255: a two-byte varint), pauses longer than a 24-bit timestamp delta, and segments
 * small enough that runs end at a segment's end. The collector encodes span records on its fast
 * path (collector_merge.c, take_fast_with) and falls back to the general one at every such
 * edge; either way each event must decode to what the program did, in order: the kind, the
 * span id, the name, no parent, the task, the worker, the thread. */
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "recorder_records_util.h"
#include "trace_files_util.h"

#define ITERATIONS 30000
#define NAMES 40

/* events: B span enter, X span exit, S poll start, E poll end, N spawn, O object, T terminate;
 * a span's values: id, name index, task, worker */
typedef struct seen {
    rr_events events;
    int name_bad, parent_bad, tid_bad, segments;
} seen;

static void add(seen *s, char kind, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    rr_add(&s->events, kind, a, b, c, d);
}

/* "span.N" for a pooled name: N, or UINT64_MAX when it is not one of the test's */
static uint64_t name_index(const d9_event *ev) {
    d9_dec_str s;
    if (!d9_value_str(d9_event_field(ev, "span_name"), &s) || s.len < 6 || s.len > 8 || memcmp(s.ptr, "span.", 5))
        return UINT64_MAX;
    uint64_t n = 0;
    for (uint32_t i = 5; i < s.len; i++) {
        if (s.ptr[i] < '0' || s.ptr[i] > '9') return UINT64_MAX;
        n = n * 10 + (uint64_t)(s.ptr[i] - '0');
    }
    return n;
}

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "SegmentMetadataEvent")) s->segments++;
    bool enter = d9t_is(ev, "SpanEnterEvent"), exit_ = d9t_is(ev, "SpanExitEvent");
    if (enter || exit_) {
        uint64_t name = name_index(ev);
        s->name_bad += name == UINT64_MAX;
        s->tid_bad += d9t_field_u(ev, "tid") != (uint64_t)gettid();
        if (enter) {
            const d9_value *parent = d9_event_field(ev, "parent_span_id");
            s->parent_bad += !parent || parent->present;
        }
        add(s, enter ? 'B' : 'X', d9t_field_u(ev, "span_id"), name, d9t_field_u(ev, "task_id"),
            d9t_field_u(ev, "worker_id"));
    } else if (d9t_is(ev, "PollStartEvent")) {
        add(s, 'S', d9t_field_u(ev, "task_id"), d9t_field_u(ev, "worker_id"), 0, 0);
    } else if (d9t_is(ev, "PollEndEvent")) {
        add(s, 'E', d9t_field_u(ev, "worker_id"), 0, 0, 0);
    } else if (d9t_is(ev, "TaskSpawnEvent")) {
        add(s, 'N', d9t_field_u(ev, "task_id"), 0, 0, 0);
    } else if (d9t_is(ev, "TaskObjectEvent")) {
        add(s, 'O', d9t_field_u(ev, "task_id"), d9t_field_u(ev, "object"), 0, 0);
    } else if (d9t_is(ev, "TaskTerminateEvent")) {
        add(s, 'T', d9t_field_u(ev, "task_id"), 0, 0, 0);
    }
}

static uint64_t span_id_of(int i) { return i % 2 ? (1ull << 63) + (uint64_t)i : (uint64_t)(i & 0x7f); }

/* One request's events: a span begun in the read callback's poll, the answer's write spawned
 * there, the span ended in the write's own poll or, every fifth request, outside any poll. */
static void request(seen *want, int i, uint64_t worker, const d9_loc *const *names, const d9_loc *where) {
    /* names come into use one by one: a name's first event is in the middle of a run */
    int used = 1 + i / (ITERATIONS / NAMES);
    if (used > NAMES) used = NAMES;
    uint64_t name = (uint64_t)((i * 7) % used), id = span_id_of(i);
    uint64_t reader = 2 * (uint64_t)i + 1, writer = (1ull << 62) + (uint64_t)i;
    d9_poll_begin(reader, where);
    add(want, 'S', reader, worker, 0, 0);
    d9_span_begin(names[name], id);
    add(want, 'B', id, name, reader, worker);
    d9_task_spawn_object(writer, where, (const void *)(uintptr_t)(i + 1));
    add(want, 'N', writer, 0, 0, 0);
    add(want, 'O', writer, (uint64_t)i + 1, 0, 0);
    d9_poll_end();
    add(want, 'E', worker, 0, 0, 0);
    if (i % 5 == 4) {
        d9_span_end(names[name], id);
        add(want, 'X', id, name, 0, worker);
    } else {
        d9_poll_begin(writer, where);
        add(want, 'S', writer, worker, 0, 0);
        d9_span_end(names[name], id);
        add(want, 'X', id, name, writer, worker);
        d9_poll_end();
        add(want, 'E', worker, 0, 0, 0);
    }
    d9_task_terminate(writer);
    add(want, 'T', writer, 0, 0, 0);
}

int main(void) {
    char *dir = d9t_mkdtemp("spanrec");
    d9_config cfg;
    rr_config_segments(&cfg, dir); /* several segments: runs meet a segment's end */
    CHECK(d9_start(&cfg) == 0);
    const d9_loc *names[NAMES];
    for (int i = 0; i < NAMES; i++) {
        char name[16];
        snprintf(name, sizeof name, "span.%d", i);
        CHECK((names[i] = d9_loc_intern(name)) != NULL);
    }
    const d9_loc *where = D9_HERE;
    seen want = {0};
    uint64_t worker = d9_worker_begin("spans", 0);
    for (int i = 0; i < ITERATIONS; i++) {
        if (i == ITERATIONS / 2) { /* the same thread, no longer a worker: worker_id 255 */
            d9_worker_end();
            worker = 255;
        }
        request(&want, i, worker, names, where);
        if (i % 7000 == 6999) { /* longer than a 24-bit delta (16.7 ms): a timestamp reset */
            struct timespec nap = {0, 20 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        if (i % 1500 == 1499) d9_flush();
    }
    rr_stop_nothing_dropped();

    seen got = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &got) == 0);
    CHECK(got.segments >= 3);
    CHECK_EQ_U64(got.events.n, want.events.n);
    size_t bad = rr_differences(&got.events, &want.events);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(got.name_bad, 0);
    CHECK_EQ_U64(got.parent_bad, 0);
    CHECK_EQ_U64(got.tid_bad, 0);
    printf("span_records: %zu events in %d segments\n", got.events.n, got.segments);
    free(got.events.ev);
    free(want.events.ev);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_span_records");
}
