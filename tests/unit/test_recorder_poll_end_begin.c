/* d9_poll_end_begin: a poll's end and the next poll's begin in one call (one clock read). The
 * trace must hold exactly what d9_poll_end then d9_poll_begin would write, the end first and
 * both at the same time, on either clock: on its fast path (ring with room, location interned)
 * and its slow one (the thread's first event, a location not yet interned, a full ring's edge
 * in long runs). While paused it records the end of a poll begun while recording, and no
 * begin, as d9_poll_end and d9_poll_begin do. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "dial9/dial9.h"
#include "recorder_records_util.h"
#include "trace_files_util.h"

#define SWITCHES 30000

typedef struct rec {
    char kind; /* S poll start, E poll end */
    uint64_t task, ts;
    bool loc_b;
} rec;

typedef struct seen {
    rec *r;
    size_t n, cap;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    bool start = d9t_is(ev, "PollStartEvent"), end = d9t_is(ev, "PollEndEvent");
    if (!start && !end) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
    }
    rec r = {start ? 'S' : 'E', start ? d9t_field_u(ev, "task_id") : 0, ev->ts_ns, false};
    d9_dec_str loc;
    if (start && d9_value_str(d9_event_field(ev, "spawn_loc"), &loc)) r.loc_b = memmem(loc.ptr, loc.len, "place B", 7) != NULL;
    s->r[s->n++] = r;
}

static const d9_loc *g_a, *g_b;

/* The switches, on a thread of its own so that its first event is the fused call's slow path. */
static void *switches(void *arg) {
    (void)arg;
    d9_poll_end_begin(1, g_a); /* the thread's first event: an end without a begin, then task 1 */
    /* a location interned by nothing yet: the slow path interns it */
    static d9_loc fresh = {.file = "place B (fresh)", .function = "switches", .line = 1};
    d9_poll_end_begin(2, &fresh);
    for (uint64_t i = 3; i <= SWITCHES; i++) {
        d9_poll_end_begin(i, (i & 1) ? g_a : g_b);
        if (i % 4096 == 0) d9_flush(); /* nothing dropped: every switch is checked */
    }
    d9_poll_end();
    return NULL;
}

static void record(d9_clock_mode clock) {
    char *dir = d9t_mkdtemp("end-begin");
    d9_config cfg;
    rr_config_hooks_only(&cfg, dir);
    cfg.clock = clock;
    CHECK(d9_start(&cfg) == 0);
    g_a = d9_loc_intern("place A");
    g_b = d9_loc_intern("place B");
    pthread_t th;
    CHECK(pthread_create(&th, NULL, switches, NULL) == 0);
    pthread_join(th, NULL);

    /* paused inside a poll: the fused call ends it and begins nothing; resumed, it is whole */
    d9_poll_begin(100, g_a);
    d9_set_enabled(false);
    d9_poll_end_begin(101, g_a);
    d9_poll_end_begin(102, g_a); /* no poll open: nothing */
    d9_set_enabled(true);
    d9_poll_end_begin(103, g_b);
    d9_poll_end();
    d9_stop();

    seen s = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    /* the switching thread: E S(1) E S(2) ... E S(SWITCHES) E; then the main thread's
     * S(100) E, E S(103) E (threads merge by time: the main thread's come after, it waited) */
    size_t want = 2 * SWITCHES + 1 + 5;
    if (s.n != want) printf("%s: %zu poll events, want %zu\n", clock == D9_CLOCK_TSC ? "tsc" : "monotonic", s.n, want);
    CHECK_EQ_U64(s.n, want);
    size_t bad_order = 0, bad_task = 0, bad_time = 0, bad_loc = 0;
    for (uint64_t i = 1; i <= SWITCHES && 2 * i < s.n; i++) {
        const rec *e = &s.r[2 * i - 2], *b = &s.r[2 * i - 1];
        bad_order += e->kind != 'E' || b->kind != 'S';
        bad_task += b->task != i;
        if (e->ts != b->ts && bad_time < 5) printf("switch %llu: end at %llu, begin at %llu\n", (unsigned long long)i, (unsigned long long)e->ts, (unsigned long long)b->ts);
        bad_time += e->ts != b->ts; /* one clock read for both */
        if (i >= 3) bad_loc += b->loc_b != !(i & 1);
    }
    CHECK_EQ_U64(bad_order, 0);
    CHECK_EQ_U64(bad_task, 0);
    CHECK_EQ_U64(bad_time, 0);
    CHECK_EQ_U64(bad_loc, 0);
    CHECK(s.n > 1 && s.r[1].loc_b == false && s.r[3].loc_b == true); /* "place A", then the fresh "place B" */
    if (s.n == want) {
        const rec *m = &s.r[2 * SWITCHES + 1];
        CHECK(m[0].kind == 'S' && m[0].task == 100);
        CHECK(m[1].kind == 'E');                                   /* the pause ended 100 */
        CHECK(m[2].kind == 'E');                                   /* resumed: an end ... */
        CHECK(m[3].kind == 'S' && m[3].task == 103 && m[3].loc_b); /* ... and 103 at once */
        CHECK(m[2].ts == m[3].ts);
        CHECK(m[4].kind == 'E');
    }
    free(s.r);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    record(D9_CLOCK_TSC);
    record(D9_CLOCK_MONOTONIC);
    return d9t_summary("test_recorder_poll_end_begin");
}
