/* The libev adapter against Debian's shared libev: a loop with a repeating timer, a one-shot
 * timer that restarts itself from its callback, idle / prepare / check watchers, an io
 * watcher on a socketpair, an async watcher sent to from another thread, ev_once, and the
 * application's own release/acquire callbacks set before instrumenting. The program counts
 * its callbacks and checks watchers and data; then it reads the trace back and checks polls
 * per task and callback, spawn locations, spawns/terminates (a restarted one-shot timer is
 * one task), wakes, and one park per release callback on the loop's thread. */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/ev.h"

#define N_TIMER 5
#define N_ONESHOT 3
#define N_IDLE 20
#define N_ASYNC 3
#define LOOP_NAME "ev-test"
#define N_REUSE 3

static struct ev_loop *loop;
static ev_timer timer, oneshot, reuse;
static ev_idle idle;
static ev_prepare prepare;
static ev_check check;
static ev_io io;
static ev_async async;
static ev_prepare fed; /* never started: the application feeds it one event */
static int sv[2];
static sem_t async_ran;
static int tag_timer, tag_oneshot, tag_idle, tag_prepare, tag_check, tag_io, tag_async, tag_once;

static struct {
    int timer, oneshot, idle, prepare, check, io, async, once, fed, release, acquire;
    int reuse_starts, reuse;
    int bad;
    long bytes;
} n;

static long tid(void) { return (long)syscall(SYS_gettid); }

static void expect(const void *w, const void *want, const void *data, const void *tag) {
    if (w != want || data != tag) n.bad++;
}

static void maybe_finish(void) {
    if (n.timer == N_TIMER && n.oneshot == N_ONESHOT && n.idle == N_IDLE && n.async == N_ASYNC &&
        n.once == 1 && n.bytes == N_TIMER && n.reuse == N_REUSE) {
        ev_prepare_stop(loop, &prepare);
        ev_check_stop(loop, &check);
    }
}

static void on_timer(struct ev_loop *l, ev_timer *w, int revents) {
    expect(w, &timer, w->data, &tag_timer);
    if (l != loop || !(revents & EV_TIMER)) n.bad++;
    n.timer++;
    char c = 'x';
    if (write(sv[1], &c, 1) != 1) n.bad++;
    if (n.timer == N_TIMER) {
        ev_timer_stop(l, w);
        if (w->cb != on_timer) n.bad++; /* the application's callback is back */
    }
    maybe_finish();
}

static void on_oneshot(struct ev_loop *l, ev_timer *w, int revents) {
    expect(w, &oneshot, w->data, &tag_oneshot);
    if (!(revents & EV_TIMER) || ev_is_active(w)) n.bad++;
    if (w->cb != on_oneshot) n.bad++; /* stopped by libev: the callback was given back */
    if (++n.oneshot < N_ONESHOT) {
        ev_timer_set(w, 0.001, 0.);
        ev_timer_start(l, w); /* the same task goes on */
    }
    maybe_finish();
}

static void on_idle(struct ev_loop *l, ev_idle *w, int revents) {
    expect(w, &idle, w->data, &tag_idle);
    if (!(revents & EV_IDLE)) n.bad++;
    if (++n.idle == N_IDLE) ev_idle_stop(l, w);
    maybe_finish();
}

/* The same watcher started N_REUSE times by another task: a new task each time. */
static void on_reuse(struct ev_loop *l, ev_timer *w, int revents) {
    (void)l;
    (void)w;
    (void)revents;
    n.reuse++;
    maybe_finish();
}

static void on_prepare(struct ev_loop *l, ev_prepare *w, int revents) {
    (void)revents;
    expect(w, &prepare, w->data, &tag_prepare);
    n.prepare++;
    if (!ev_is_active(&reuse) && n.reuse == n.reuse_starts && n.reuse_starts < N_REUSE) {
        n.reuse_starts++;
        ev_timer_init(&reuse, on_reuse, 0.0005, 0.);
        ev_timer_start(l, &reuse);
    }
}

static void on_check(struct ev_loop *l, ev_check *w, int revents) {
    (void)l;
    (void)revents;
    expect(w, &check, w->data, &tag_check);
    n.check++;
}

static void on_io(struct ev_loop *l, ev_io *w, int revents) {
    expect(w, &io, w->data, &tag_io);
    if (!(revents & EV_READ)) n.bad++;
    n.io++;
    char buf[64];
    ssize_t r = read(w->fd, buf, sizeof buf);
    if (r > 0) n.bytes += r;
    if (n.bytes == N_TIMER) ev_io_stop(l, w);
    maybe_finish();
}

static void on_async(struct ev_loop *l, ev_async *w, int revents) {
    expect(w, &async, w->data, &tag_async);
    if (!(revents & EV_ASYNC)) n.bad++;
    if (++n.async == N_ASYNC) ev_async_stop(l, w);
    sem_post(&async_ran);
    maybe_finish();
}

static void *async_sender(void *unused) {
    (void)unused;
    for (int i = 0; i < N_ASYNC; i++) {
        ev_async_send(loop, &async);
        sem_wait(&async_ran);
    }
    return NULL;
}

static void on_fed(struct ev_loop *l, ev_prepare *w, int revents) {
    (void)l;
    if (w != &fed || revents != EV_CUSTOM || w->cb != on_fed) n.bad++;
    n.fed++;
}

static void on_once(int revents, void *arg) {
    if (arg != &tag_once || !(revents & EV_TIMER)) n.bad++;
    n.once++;
    maybe_finish();
}

/* The application's own release/acquire callbacks (e.g. for a loop lock). */
static void user_release(struct ev_loop *l) {
    if (l != loop) n.bad++;
    n.release++;
}

static void user_acquire(struct ev_loop *l) {
    if (l != loop) n.bad++;
    n.acquire++;
}

static d9_loc idle_site = {"idle-site", "main", 0, 0};

static void run_workload(void) {
    loop = ev_loop_new(EVFLAG_AUTO);
    CHECK(loop != NULL);
    ev_set_loop_release_cb(loop, user_release, user_acquire);
    CHECK(d9_ev_instrument(loop, LOOP_NAME) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);

    ev_timer_init(&timer, on_timer, 0.001, 0.001);
    timer.data = &tag_timer;
    ev_timer_start(loop, &timer);
    ev_timer_init(&oneshot, on_oneshot, 0.001, 0.);
    oneshot.data = &tag_oneshot;
    ev_timer_start(loop, &oneshot);
    ev_idle_init(&idle, on_idle);
    idle.data = &tag_idle;
    d9_ev_location(&idle_site);
    ev_idle_start(loop, &idle);
    ev_prepare_init(&prepare, on_prepare);
    prepare.data = &tag_prepare;
    ev_prepare_start(loop, &prepare);
    ev_check_init(&check, on_check);
    check.data = &tag_check;
    ev_check_start(loop, &check);
    ev_io_init(&io, on_io, sv[0], EV_READ);
    io.data = &tag_io;
    ev_io_start(loop, &io);
    ev_async_init(&async, on_async);
    async.data = &tag_async;
    ev_async_start(loop, &async);
    ev_once(loop, -1, 0, 0.001, on_once, &tag_once);
    ev_prepare_init(&fed, on_fed);
    ev_feed_event(loop, &fed, EV_CUSTOM);

    pthread_t sender;
    pthread_create(&sender, NULL, async_sender, NULL);
    ev_run(loop, 0); /* returns when no watcher is active */
    pthread_join(sender, NULL);
    ev_loop_destroy(loop);
    close(sv[0]);
    close(sv[1]);
}

static void check_polls(const at_trace *t, const char *loc, const void *obj, long want) {
    at_check_polls(t, loc, obj, want, LOOP_NAME);
}

int main(void) {
    sem_init(&async_ran, 0, 0);
    char *dir = at_mkdtemp("ev");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 5;
    CHECK(d9_start(&cfg) == 0);
    long loop_tid = tid();
    run_workload();
    d9_stop();

    CHECK_EQ_U64(n.bad, 0);
    CHECK_EQ_U64(n.timer, N_TIMER);
    CHECK_EQ_U64(n.oneshot, N_ONESHOT);
    CHECK_EQ_U64(n.idle, N_IDLE);
    CHECK_EQ_U64(n.async, N_ASYNC);
    CHECK_EQ_U64(n.once, 1);
    CHECK_EQ_U64(n.fed, 1);
    CHECK_EQ_U64(n.bytes, N_TIMER);
    CHECK(n.release > 0 && n.release == n.acquire);
    /* stopped watchers hold the application's callbacks again */
    CHECK(timer.cb == on_timer && oneshot.cb == on_oneshot && idle.cb == on_idle);
    CHECK(io.cb == on_io && async.cb == on_async && prepare.cb == on_prepare && fed.cb == on_fed);

    at_trace t;
    at_check_run(&t, d9_run_dir(), LOOP_NAME, loop_tid);
    /* one park per backend poll: as many as the application's release callback ran */
    CHECK_EQ_U64(at_parks_on_runtime(&t, LOOP_NAME), n.release);

    check_polls(&t, "on_timer", &timer, n.timer);
    check_polls(&t, "on_oneshot", &oneshot, n.oneshot);
    check_polls(&t, "idle-site", &idle, n.idle);
    check_polls(&t, "on_prepare", &prepare, n.prepare);
    check_polls(&t, "on_check", &check, n.check);
    check_polls(&t, "on_io", &io, n.io);
    check_polls(&t, "on_async", &async, n.async);
    CHECK_EQ_U64(at_polls(&t, "on_once", 0), 1);

    check_polls(&t, "on_fed", &fed, 1);
    const void *watchers[] = {&timer, &oneshot, &idle, &prepare, &check, &io, &async, &fed};
    const char *names[] = {"on_timer", "on_oneshot", "idle-site", "on_prepare", "on_check",
                           "on_io", "on_async", "on_fed"};
    for (size_t i = 0; i < sizeof watchers / sizeof *watchers; i++)
        at_check_lifetime(&t, at_task(&t, watchers[i]), names[i]);
    at_check_lifetime(&t, at_task_polled_at(&t, "on_once"), "on_once");

    at_check_outside_wakes(&t, at_task(&t, &async), N_ASYNC);

    /* a watcher started again by another task is a new task each time */
    CHECK_EQ_U64(n.reuse, N_REUSE);
    CHECK_EQ_U64(at_tasks_of(&t, &reuse, NULL), N_REUSE);
    CHECK_EQ_U64(at_distinct_tasks(&t, "on_reuse"), N_REUSE);
    at_check_task_identity(&t);

    /* the io watcher is woken by the poller each time its callback runs */
    static const char *const io_locs[] = {"on_io"};
    at_check_wakes(&t, io_locs, 1);

    at_free(&t);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_ev_adapter");
}
