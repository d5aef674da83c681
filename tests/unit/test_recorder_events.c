/* What the recorder writes: every built-in event with the right fields, custom events with
 * every field kind, the segment preamble, timestamps within 1 µs of clock_gettime, and a
 * forked child that never writes into the parent's files. */
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

static uint64_t mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct seen {
    int metadata, clock_sync, poll_start, poll_end, park, unpark, wake, spawn, terminate, custom;
    int registered;
    int first_is_metadata;
    uint64_t n_events;
    int clock_checks, clock_bad;
    uint64_t worst_clock_err;
    char loc[256];
    uint64_t wake_waker, wake_woken, wake_target;
    uint64_t sched_wait_max;
    int custom_ok;
} seen;

static uint64_t g_before[2000], g_after[2000];

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (s->n_events++ == 0) s->first_is_metadata = d9t_is(ev, "SegmentMetadataEvent");
    d9_dec_str str;
    if (d9t_is(ev, "SegmentMetadataEvent")) {
        s->metadata++;
    } else if (d9t_is(ev, "ClockSyncEvent")) s->clock_sync++;
    else if (d9t_is(ev, "PollStartEvent")) {
        s->poll_start++;
        if (d9_value_str(d9_event_field(ev, "spawn_loc"), &str))
            snprintf(s->loc, sizeof s->loc, "%.*s", (int)str.len, str.ptr);
    } else if (d9t_is(ev, "PollEndEvent")) s->poll_end++;
    else if (d9t_is(ev, "WorkerParkEvent")) s->park++;
    else if (d9t_is(ev, "WorkerUnparkEvent")) {
        s->unpark++;
        uint64_t w = d9t_field_u(ev, "sched_wait_ns");
        if (w > s->sched_wait_max) s->sched_wait_max = w;
    } else if (d9t_is(ev, "WakeEventEvent")) {
        s->wake++;
        s->wake_waker = d9t_field_u(ev, "waker_task_id");
        s->wake_woken = d9t_field_u(ev, "woken_task_id");
        s->wake_target = d9t_field_u(ev, "target_worker");
    } else if (d9t_is(ev, "TaskSpawnEvent")) s->spawn++;
    else if (d9t_is(ev, "TaskTerminateEvent")) s->terminate++;
    else if (d9t_is(ev, "WorkerRegisteredEvent")) s->registered++;
    else if (d9t_is(ev, "ClockProbeEvent")) {
        uint64_t i = d9t_field_u(ev, "i");
        if (i < 2000) {
            s->clock_checks++;
            /* Taken between the two clock reads: must fall within them, ±1 µs. */
            uint64_t lo = g_before[i] - 1000, hi = g_after[i] + 1000;
            if (ev->ts_ns < lo || ev->ts_ns > hi) s->clock_bad++;
            uint64_t err = ev->ts_ns < g_before[i] ? g_before[i] - ev->ts_ns
                         : ev->ts_ns > g_after[i] ? ev->ts_ns - g_after[i] : 0;
            if (err > s->worst_clock_err) s->worst_clock_err = err;
        }
    } else if (d9t_is(ev, "EverythingEvent")) {
        s->custom++;
        const d9_value *v = ev->values;
        d9_dec_str a, b;
        s->custom_ok = ev->schema->field_count == 6 && v[0].u == 12345678901ull && v[1].i == -42 &&
                       v[2].f == 2.5 && v[3].u == 1 && d9_value_str(&v[4], &a) && a.len == 5 &&
                       memcmp(a.ptr, "hello", 5) == 0 && d9_value_str(&v[5], &b) && b.len == 5 &&
                       memcmp(b.ptr, "users", 5) == 0;
    }
}

int main(void) {
    char *dir = d9t_mkdtemp("events");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == 0);

    static const d9_field fields[] = {{"u", D9_U64}, {"i", D9_I64}, {"f", D9_F64},
                                      {"b", D9_BOOL}, {"s", D9_STRING}, {"table", D9_STATIC_STRING}};
    const d9_event_type *everything = d9_event_type_define("EverythingEvent", fields, 6);
    CHECK(everything != NULL);
    CHECK(d9_event_type_define("EverythingEvent", fields, 6) == everything);
    CHECK(d9_event_type_define("EverythingEvent", fields, 5) == NULL); /* other fields */
    static const d9_field probe_fields[] = {{"i", D9_U64}};
    const d9_event_type *probe = d9_event_type_define("ClockProbeEvent", probe_fields, 1);

    uint32_t wid = d9_worker_begin("evttests", 0);
    CHECK(wid < 254);
    CHECK_EQ_U64(d9_worker_begin("evttests", 0), wid); /* same pair, same id */
    CHECK(d9_worker_begin("other-runtime", 0) != wid);  /* runtimes never share ids */
    d9_worker_begin("evttests", 0);

    d9_task_spawn(77, D9_HERE);
    d9_poll_begin(77, D9_HERE);
    d9_wake(78);
    d9_poll_end();
    d9_park();
    struct timespec nap = {0, 2 * 1000 * 1000};
    nanosleep(&nap, NULL);
    d9_unpark();
    d9_task_terminate(77);
    D9_EMIT(everything, {.u = 12345678901ull}, {.i = -42}, {.f = 2.5}, {.b = true}, {.s = "hello"},
            {.s = "users"});
    /* Clock alignment over a couple of seconds, with sleeps so the TSC mapping must track. */
    for (uint64_t i = 0; i < 2000; i++) {
        g_before[i] = mono();
        D9_EMIT(probe, {.u = i});
        g_after[i] = mono();
        if (i % 100 == 0) {
            struct timespec t = {0, 100 * 1000 * 1000};
            nanosleep(&t, NULL);
        }
    }

    /* A forked child records nothing and must not touch our files. */
    pid_t pid = fork();
    if (pid == 0) {
        d9_poll_begin(999, D9_HERE);
        d9_poll_end();
        d9_stop();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    d9_poll_begin(1000, D9_HERE);
    d9_poll_end();
    d9_stop();

    seen s = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    CHECK(s.first_is_metadata);
    CHECK_EQ_U64(s.metadata, 2); /* the segment's, and again for the worker registered after it */
    CHECK_EQ_U64(s.clock_sync, 1);
    CHECK_EQ_U64(s.poll_start, 2);
    CHECK_EQ_U64(s.poll_end, 2);
    CHECK_EQ_U64(s.park, 1);
    CHECK_EQ_U64(s.unpark, 1);
    CHECK_EQ_U64(s.spawn, 1);
    CHECK_EQ_U64(s.terminate, 1);
    CHECK_EQ_U64(s.wake, 1);
    CHECK_EQ_U64(s.wake_waker, 77);
    CHECK_EQ_U64(s.wake_woken, 78);
    CHECK_EQ_U64(s.wake_target, wid);
    CHECK_EQ_U64(s.custom, 1);
    CHECK(s.custom_ok);
    CHECK(s.registered >= 1);
    CHECK(strstr(s.loc, "test_recorder_events.c:") != NULL);
    CHECK_EQ_U64(s.clock_checks, 2000);
    CHECK_EQ_U64(s.clock_bad, 0);
    printf("clock: worst distance outside the bracketing clock_gettime reads: %" PRIu64 " ns\n",
           s.worst_clock_err);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_events");
}
