/* The libuv adapter's loop requests whose spawn waits for the loop's park (thread_state.h,
 * d9a_defer_spawn), and the unpark that goes with the first callback's poll (poll_returned.h),
 * against Debian's shared libuv, on two socketpairs:
 *   - quick: a timer writes one byte each tick to a socket nobody reads; libuv takes it at once
 *     and runs the callback in the same loop iteration, before the poller: that callback is a
 *     poll of the timer's task, and the write request has no spawn, object or terminate;
 *   - orphan: a check handle writes one byte and closes itself in the same callback (after the
 *     poller, where libuv 1.44 has run this iteration's write callbacks): its close callback
 *     (its task's terminate) runs at the end of that iteration, the write's callback in the next
 *     one before the poller, so the write's callback must not be a poll of the check handle's
 *     task: it is spawned at its callback instead;
 *   - crowded: the first socket's own read callback writes one byte back, then submits a pool
 *     request that fails at once (a read of no buffer), whose task ends there, before the
 *     write's callback; the write's submitter is the socket's task, which libuv cannot have
 *     closed before the write's callback: still a poll of that task (a server's connection
 *     answering while other tasks end around it, as the demo server's);
 *   - stuck: a timer writes more than the second socket's buffer, read only from a later
 *     timer's callback: still pending when the loop parks, the write is spawned there and is
 *     its own task (one spawn, its callback's poll, one terminate).
 * Each phase starts from the previous one's callbacks, so the order does not follow timing. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/uv.h"
#include "unit/test_source_util.h"

#define LOOP_NAME "uv-writes"
#define N_QUICK 5
#define STUCK_BYTES (8u << 20) /* past any socket buffer: the write waits for the reader */

static uv_loop_t loop;
static uv_pipe_t quiet, stuck_writer, stuck_reader; /* quiet: its peer never reads */
static uv_timer_t ticker, stuck_timer, drain_timer;
static int quiet_fds[2];
static uv_check_t orphan_check;
static uv_timer_t pulse; /* the loop's poller returns soon: the check handles after it run */
static uv_check_t starter;
static uv_write_t quick_req[N_QUICK], stuck_req, orphan_req, crowd_req;
static uv_fs_t failing_req;
static char *stuck_buf;
static char read_buf[65536];
static size_t drained;
static struct {
    int quick, stuck, orphan, orphan_closed, crowd, ticks, bad;
} n;

static void on_closed(uv_handle_t *h) { (void)h; }

static void on_quick_written(uv_write_t *req, int status) {
    (void)req;
    if (status != 0) n.bad++;
    n.quick++;
}

static void on_orphan_closed(uv_handle_t *h) {
    (void)h;
    n.orphan_closed++;
}

static void on_start_stuck(uv_timer_t *h);

static void on_crowd_written(uv_write_t *req, int status) {
    (void)req;
    if (status != 0) n.bad++;
    n.crowd++;
    uv_timer_start(&stuck_timer, on_start_stuck, 1, 0);
}

static void on_never(uv_fs_t *req) {
    (void)req;
    n.bad++;
}

static void on_crowd_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h, (void)suggested;
    *buf = uv_buf_init(read_buf, 1);
}

static void on_crowd_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    if (nread == 0) return;
    if (nread != 1) n.bad++;
    uv_read_stop(s);
    static char byte = 'c';
    uv_buf_t b = uv_buf_init(&byte, 1);
    if (uv_write(&crowd_req, s, &b, 1, on_crowd_written) != 0) n.bad++;
    /* a task that ends before the write's callback: libuv refuses a read of no buffer */
    if (uv_fs_read(&loop, &failing_req, 0, NULL, 0, 0, on_never) != UV_EINVAL) n.bad++;
}

static void on_orphan_written(uv_write_t *req, int status) {
    (void)req;
    if (status != 0) n.bad++;
    if (!n.orphan_closed) n.bad++; /* libuv ran the close callback first, as the test needs */
    n.orphan++;
    /* crowded: the socket reads a byte its peer holds */
    if (write(quiet_fds[1], "c", 1) != 1) n.bad++;
    uv_read_start((uv_stream_t *)&quiet, on_crowd_alloc, on_crowd_read);
}

static void on_orphan_check(uv_check_t *h) {
    static char byte = 'o';
    uv_buf_t b = uv_buf_init(&byte, 1);
    if (uv_write(&orphan_req, (uv_stream_t *)&quiet, &b, 1, on_orphan_written) != 0) n.bad++;
    uv_close((uv_handle_t *)h, on_orphan_closed);
}

static void on_pulse(uv_timer_t *h) { (void)h; }

static void on_tick(uv_timer_t *h);

/* After the loop's first poller call: a write is deferred only in a run whose poller a wrapper
 * parks (end_deferrable), which the first call says; a tick before it would be spawned. */
static void on_starter(uv_check_t *h) {
    uv_timer_stop(&pulse);
    uv_timer_start(&ticker, on_tick, 1, 1);
    uv_close((uv_handle_t *)h, on_closed);
}

static void on_tick(uv_timer_t *h) {
    static char byte = 'q';
    uv_buf_t b = uv_buf_init(&byte, 1);
    if (uv_write(&quick_req[n.ticks], (uv_stream_t *)&quiet, &b, 1, on_quick_written) != 0) n.bad++;
    if (++n.ticks < N_QUICK) return;
    uv_timer_stop(h);
    uv_check_start(&orphan_check, on_orphan_check);
    uv_timer_start(&pulse, on_pulse, 1, 0);
}

static void close_all_when_done(void) {
    if (!n.stuck || drained < STUCK_BYTES) return;
    uv_read_stop((uv_stream_t *)&stuck_reader);
    uv_handle_t *all[] = {(uv_handle_t *)&stuck_reader, (uv_handle_t *)&stuck_writer,
                          (uv_handle_t *)&quiet,        (uv_handle_t *)&ticker,
                          (uv_handle_t *)&stuck_timer,  (uv_handle_t *)&drain_timer,
                          (uv_handle_t *)&pulse};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) uv_close(all[i], on_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h, (void)suggested;
    *buf = uv_buf_init(read_buf, sizeof read_buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    (void)s, (void)buf;
    if (nread < 0) n.bad++;
    if (nread > 0) drained += (size_t)nread;
    close_all_when_done();
}

static void on_stuck_written(uv_write_t *req, int status) {
    (void)req;
    if (status != 0) n.bad++;
    n.stuck++;
    close_all_when_done();
}

static void on_drain_timer(uv_timer_t *h) {
    (void)h;
    if (n.stuck) n.bad++; /* the stuck write waits for this reader */
    uv_read_start((uv_stream_t *)&stuck_reader, on_alloc, on_read);
}

static void on_start_stuck(uv_timer_t *h) {
    (void)h;
    uv_buf_t b = uv_buf_init(stuck_buf, STUCK_BYTES);
    if (uv_write(&stuck_req, (uv_stream_t *)&stuck_writer, &b, 1, on_stuck_written) != 0) n.bad++;
    uv_timer_start(&drain_timer, on_drain_timer, 5, 0);
}

int main(void) {
    char *dir = at_mkdtemp("uv-writes");
    CHECK(dir != NULL);
    stuck_buf = calloc(1, STUCK_BYTES);
    CHECK(stuck_buf != NULL);
    int stuck_fds[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, quiet_fds) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, stuck_fds) == 0);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 5;
    CHECK(uv_loop_init(&loop) == 0);
    CHECK(d9_uv_instrument(&loop, LOOP_NAME) == 0);
    CHECK(d9_start(&cfg) == 0);
    long loop_tid = (long)syscall(SYS_gettid);

    CHECK(uv_pipe_init(&loop, &quiet, 0) == 0 && uv_pipe_open(&quiet, quiet_fds[0]) == 0);
    CHECK(uv_pipe_init(&loop, &stuck_writer, 0) == 0 && uv_pipe_open(&stuck_writer, stuck_fds[0]) == 0);
    CHECK(uv_pipe_init(&loop, &stuck_reader, 0) == 0 && uv_pipe_open(&stuck_reader, stuck_fds[1]) == 0);
    uv_timer_init(&loop, &ticker);
    uv_timer_init(&loop, &stuck_timer);
    uv_timer_init(&loop, &drain_timer);
    uv_check_init(&loop, &orphan_check);
    uv_timer_init(&loop, &pulse);
    uv_check_init(&loop, &starter);
    uv_check_start(&starter, on_starter);
    uv_timer_start(&pulse, on_pulse, 1, 1); /* the poller returns: the starter runs after it */
    CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
    CHECK(uv_loop_close(&loop) == 0);
    d9_stop();
    close(quiet_fds[1]);

    CHECK_EQ_U64(n.bad, 0);
    CHECK_EQ_U64(n.quick, N_QUICK);
    CHECK_EQ_U64(n.orphan, 1);
    CHECK_EQ_U64(n.stuck, 1);
    CHECK_EQ_U64(n.crowd, 1);

    at_trace t;
    const at_worker *w = at_check_run(&t, d9_run_dir(), LOOP_NAME, (pid_t)loop_tid);
    CHECK(w != NULL);
    /* no poll after its task's terminate, every poll's task spawned before it */
    at_check_task_identity(&t);

    /* quick: polls of the timer's task, no task of the requests' own */
    uint64_t ticker_task = at_task(&t, &ticker);
    CHECK(ticker_task != 0);
    CHECK_EQ_U64(at_polls(&t, "on_quick_written", 0), N_QUICK);
    CHECK_EQ_U64(at_polls(&t, "on_quick_written", ticker_task), N_QUICK);
    for (int i = 0; i < N_QUICK; i++) CHECK_EQ_U64(at_tasks_of(&t, &quick_req[i], NULL), 0);

    /* stuck: spawned at the park, its own task to its callback's end */
    at_check_polls(&t, "on_stuck_written", &stuck_req, 1, LOOP_NAME);
    uint64_t stuck_task = at_task(&t, &stuck_req);
    CHECK(stuck_task != 0 && stuck_task != at_task(&t, &stuck_timer));
    CHECK_EQ_U64(at_spawns(&t, stuck_task, "on_stuck_written"), 1);
    CHECK_EQ_U64(at_terminates(&t, stuck_task), 1);
    /* spawned at the park after the poll that submitted it, not inside that poll */
    const at_poll *submit = NULL;
    for (size_t i = 0; i < t.npolls; i++)
        if (strcmp(t.polls[i].loc, "on_start_stuck") == 0) submit = &t.polls[i];
    CHECK(submit != NULL);
    for (size_t i = 0; submit && i < t.nspawns; i++)
        if (t.spawns[i].task == stuck_task) CHECK(t.spawns[i].ts_ns >= submit->end_ns);

    /* orphan: its submitter ended first, so its callback is a task of its own */
    uint64_t orphan_check_task = at_task(&t, &orphan_check);
    CHECK(orphan_check_task != 0);
    CHECK_EQ_U64(at_terminates(&t, orphan_check_task), 1);
    CHECK_EQ_U64(at_polls(&t, "on_orphan_written", orphan_check_task), 0);
    at_check_polls(&t, "on_orphan_written", &orphan_req, 1, LOOP_NAME);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &orphan_req), "on_orphan_written"), 1);
    CHECK_EQ_U64(at_terminates(&t, at_task(&t, &orphan_req)), 1);

    /* crowded: another task ended between its submission and its callback, but not its
     * submitter, the socket's task: a poll of that task, no task of its own */
    uint64_t quiet_task = at_task(&t, &quiet), failing_task = at_task(&t, &failing_req);
    CHECK(quiet_task != 0 && failing_task != 0);
    CHECK_EQ_U64(at_terminates(&t, failing_task), 1);
    CHECK_EQ_U64(at_polls(&t, "on_crowd_written", quiet_task), 1);
    CHECK_EQ_U64(at_tasks_of(&t, &crowd_req, NULL), 0);

    /* The first callback after a park whose poller found at most one task ready begins at the
     * unpark's time (its unpark and wake owed to its poll). Which turns park follows the load;
     * the drain's first turn always does (no timer is left: the poller blocks) and finds the
     * reader alone ready (the writer's socket is full), so at least one poll is held to it. */
    size_t held = 0;
    for (size_t i = 0; i < t.npolls; i++) {
        const at_poll *p = &t.polls[i];
        if (p->worker != w->id) continue;
        const at_park *u = NULL; /* the latest unpark at or before the poll's start */
        for (size_t k = 0; k < t.nparks; k++)
            if (t.parks[k].worker == w->id && t.parks[k].unpark_ns <= p->start_ns &&
                (!u || t.parks[k].unpark_ns > u->unpark_ns))
                u = &t.parks[k];
        if (!u) continue;
        bool first = true; /* no other poll of the worker since that unpark */
        for (size_t k = 0; k < t.npolls && first; k++)
            if (k != i && t.polls[k].worker == w->id && t.polls[k].start_ns >= u->unpark_ns &&
                t.polls[k].start_ns <= p->start_ns && t.polls[k].end_ns <= p->start_ns)
                first = false;
        size_t ready = 0;
        for (size_t k = 0; k < t.nwakes; k++)
            if (t.wakes[k].worker == w->id && t.wakes[k].waker == 0 && t.wakes[k].ts_ns == u->unpark_ns) ready++;
        if (!first || ready > 1) continue;
        CHECK_EQ_U64(p->start_ns, u->unpark_ns);
        held++;
    }
    CHECK(held >= 1);

    at_free(&t);
    free(stuck_buf);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_uv_write_polls");
}
