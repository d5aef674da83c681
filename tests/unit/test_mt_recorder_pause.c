/* A pause (d9_set_enabled(false)) never cuts an interval's end off: the end of a poll or park
 * that began while recording is recorded during the pause, nothing else is, and after d9_stop
 * the ends record nothing. The hooks run on one thread, in the test's order; the background
 * thread's part (it stops the hooks' calls once no end is owed: d9__paused's bits) is driven by
 * d9_flush, which returns after a drain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

/* "S<task> E P U" for the poll and park events of the run, in order */
typedef struct seq {
    char text[512];
    size_t len;
} seq;

static void add(seq *s, const char *what) {
    int n = snprintf(s->text + s->len, sizeof s->text - s->len, "%s%s", s->len ? " " : "", what);
    if (n > 0 && (size_t)n < sizeof s->text - s->len) s->len += (size_t)n;
}

static void on_event(const d9_event *ev, void *ctx) {
    seq *s = ctx;
    char buf[32];
    if (d9t_is(ev, "PollStartEvent")) {
        snprintf(buf, sizeof buf, "S%llu", (unsigned long long)d9t_field_u(ev, "task_id"));
        add(s, buf);
    } else if (d9t_is(ev, "PollEndEvent")) add(s, "E");
    else if (d9t_is(ev, "WorkerParkEvent")) add(s, "P");
    else if (d9t_is(ev, "WorkerUnparkEvent")) add(s, "U");
}

int main(void) {
    char *dir = d9t_mkdtemp("pause");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedule_profile = false; /* hook events only */
    setenv("DIAL9_POLL_CPU_MIN_US", "0", 1); /* ... not a poll's PollCpuEvent when preempted over 1 ms */
    CHECK(d9_start(&cfg) == 0);

    /* paused while parked: the unpark is the park's end */
    d9_park();
    d9_set_enabled(false);
    d9_flush();
    d9_flush(); /* two drains into the pause: the bits of what nobody owes are cleared */
    CHECK_EQ_U64(d9__paused & 3, 2); /* an unpark owed, no poll end */
    d9_unpark();
    d9_unpark(); /* nothing open any more: nothing */
    d9_park();   /* paused: not recorded, and not a park to end */
    d9_unpark();

    /* paused from inside a poll: its end; a poll wholly within the pause: nothing */
    d9_set_enabled(true);
    d9_poll_begin(1, D9_HERE);
    d9_set_enabled(false);
    d9_poll_end();
    d9_poll_begin(2, D9_HERE);
    d9_poll_end();

    /* polls do not nest in the format (the adapters end the outer one before an inner one
     * begins): the open poll is the last one begun, and it gets its end */
    d9_set_enabled(true);
    d9_poll_begin(3, D9_HERE);
    d9_poll_end();
    d9_poll_begin(4, D9_HERE);
    d9_set_enabled(false);
    d9_flush();
    d9_flush();
    CHECK_EQ_U64(d9__paused & 3, 1); /* a poll end owed, no unpark */
    d9_poll_end();
    d9_poll_end(); /* one more than began: nothing */
    d9_flush();
    d9_flush();
    CHECK_EQ_U64(d9__paused & 3, 0); /* nothing owed: the paused hooks make no call */
    d9_poll_begin(50, D9_HERE);
    d9_poll_end();

    /* resumed: an end whose begin fell in the pause is recorded as before (as when recording
     * starts within a poll: readers expect it) */
    d9_poll_begin(5, D9_HERE);
    d9_set_enabled(true);
    d9_poll_end();

    /* stopped while parked: nothing after the stop, whatever was open */
    d9_poll_begin(6, D9_HERE);
    d9_park();
    char run[512];
    snprintf(run, sizeof run, "%s", d9_run_dir());
    d9_stop();
    d9_unpark();
    d9_poll_end();
    d9_set_enabled(false); /* not running: not "paused" either */
    d9_unpark();

    d9_stats st;
    d9_get_stats(&st);
    seq s = {.len = 0};
    CHECK(d9t_decode_run(run, on_event, &s) == 0);
    printf("recorded: %s\n", s.text);
    CHECK_STR(s.text, "P U S1 E S3 E S4 E E S6 P");
    CHECK_EQ_U64(st.events_recorded, 11);
    CHECK_EQ_U64(st.events_dropped, 0);

    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_pause");
}
