/* The libevent adapter against Debian's shared libevent: a base with a persistent timer, a
 * socketpair read event, an embedded event (event_assign with event_self_cbarg) activated
 * from another thread, event_base_once, an event freed with a finalizer, a bufferevent and a
 * listener on 127.0.0.1. The program counts its callbacks and checks their arguments and the
 * getters; then it reads the trace back and checks polls per task and callback, spawn
 * locations, terminates, wakes, park/unpark on the base's thread, and that polls never nest. */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event_struct.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <netinet/in.h>
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
#include "dial9/event.h"

#define N_TICKS 6
#define N_ACTIVE 3
#define BASE_NAME "event-test"
#define N_REUSE 3

static struct event_base *base;
static struct event *timer_ev, *read_ev;
static struct event assigned_ev, reuse_ev[2];
static struct bufferevent *bev;
static struct evconnlistener *listener;
static int sv[2], bev_sv[2];
static struct sockaddr_in listen_addr;
static sem_t activated;
static uintptr_t timer_id, bev_id; /* addresses of objects freed during the run */
static int tag_timer, tag_read, tag_once, tag_bev, tag_listener, tag_finalized;

static struct {
    int timer, readable, assigned, once, bev_read, bev_event, accept, reuse, finalized;
    int bad;
    long bytes, bev_bytes;
} n;

static long tid(void) { return (long)syscall(SYS_gettid); }

static void maybe_finish(void) {
    if (n.timer == N_TICKS && n.assigned == N_ACTIVE && n.once == 1 && n.accept == 1 &&
        n.reuse == 2 * N_REUSE &&
        n.bytes == N_TICKS && n.bev_bytes == N_TICKS && !bev)
        event_base_loopbreak(base);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    if (fd != -1 || !(what & EV_TIMEOUT) || arg != &tag_timer) n.bad++;
    /* the application sees its own callback and argument */
    if (event_get_callback_arg(timer_ev) != &tag_timer || event_get_callback(timer_ev) != on_timer)
        n.bad++;
    n.timer++;
    char c = 'x';
    if (write(sv[1], &c, 1) != 1 || write(bev_sv[1], &c, 1) != 1) n.bad++;
    if (n.timer == N_TICKS) {
        event_free(timer_ev); /* freed inside its own callback */
        timer_ev = NULL;
    }
    maybe_finish();
}

static void on_readable(evutil_socket_t fd, short what, void *arg) {
    if (fd != sv[0] || !(what & EV_READ) || arg != &tag_read) n.bad++;
    n.readable++;
    char buf[64];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r > 0) n.bytes += r;
    maybe_finish();
}

static void on_assigned(evutil_socket_t fd, short what, void *arg) {
    /* event_self_cbarg(): the argument is the event itself */
    if (fd != -1 || !(what & EV_READ) || arg != &assigned_ev) n.bad++;
    n.assigned++;
    sem_post(&activated);
    maybe_finish();
}

/* Two events' memory, each assigned again N_REUSE times, in turn: the callback of one
 * assigns the other. A new task each time. */
static void on_reuse(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    static const struct timeval now = {0, 0};
    if (++n.reuse < 2 * N_REUSE) {
        struct event *other = &reuse_ev[arg == &reuse_ev[0]];
        event_assign(other, base, -1, 0, on_reuse, other);
        event_add(other, &now);
    }
    maybe_finish();
}

static void *activator(void *unused) {
    (void)unused;
    for (int i = 0; i < N_ACTIVE; i++) {
        event_active(&assigned_ev, EV_READ, 0);
        sem_wait(&activated);
    }
    /* and a client for the listener */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr *)&listen_addr, sizeof listen_addr) != 0) n.bad++;
    close(s);
    return NULL;
}

static void on_once(evutil_socket_t fd, short what, void *arg) {
    if (fd != -1 || !(what & EV_TIMEOUT) || arg != &tag_once) n.bad++;
    n.once++;
    maybe_finish();
}

static void on_bev_read(struct bufferevent *b, void *ctx) {
    if (b != bev || ctx != &tag_bev) n.bad++;
    bufferevent_data_cb r, w;
    bufferevent_event_cb e;
    void *arg;
    bufferevent_getcb(b, &r, &w, &e, &arg);
    if (r != on_bev_read || w != NULL || arg != &tag_bev) n.bad++;
    n.bev_read++;
    n.bev_bytes += (long)evbuffer_get_length(bufferevent_get_input(b));
    evbuffer_drain(bufferevent_get_input(b), evbuffer_get_length(bufferevent_get_input(b)));
    if (n.bev_bytes == N_TICKS) {
        bufferevent_free(b); /* freed inside its own callback */
        bev = NULL;
    }
    maybe_finish();
}

static void on_bev_event(struct bufferevent *b, short what, void *ctx) {
    (void)what;
    if (b != bev || ctx != &tag_bev) n.bad++;
    n.bev_event++;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int socklen, void *ptr) {
    (void)sa;
    (void)socklen;
    if (l != listener || ptr != &tag_listener) n.bad++;
    n.accept++;
    close(fd);
    maybe_finish();
}

static d9_loc once_site = {"once-site", "main", 0, 0};

static void on_never(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    (void)arg;
    n.bad++; /* never added: never called */
}

/* A finalizer gets the application's argument (libevent holds the adapter's, event_adapter.h) */
static void on_finalized(struct event *ev, void *arg) {
    if (!ev || arg != &tag_finalized) n.bad++;
    n.finalized++;
}

static void run_workload(void) {
    CHECK(evthread_use_pthreads() == 0);
    base = event_base_new();
    CHECK(base != NULL);
    CHECK(d9_event_instrument(base, BASE_NAME) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, bev_sv) == 0);
    evutil_make_socket_nonblocking(sv[0]);

    timer_ev = event_new(base, -1, EV_PERSIST, on_timer, &tag_timer);
    timer_id = (uintptr_t)timer_ev;
    struct timeval ms = {0, 1000};
    event_add(timer_ev, &ms);
    read_ev = event_new(base, sv[0], EV_READ | EV_PERSIST, on_readable, &tag_read);
    event_add(read_ev, NULL);
    CHECK(event_assign(&assigned_ev, base, -1, 0, on_assigned, event_self_cbarg()) == 0);
    CHECK(event_get_callback_arg(&assigned_ev) == &assigned_ev);
    event_callback_fn got_cb = NULL;
    void *got_arg = NULL;
    event_get_assignment(&assigned_ev, NULL, NULL, NULL, &got_cb, &got_arg);
    CHECK(got_cb == on_assigned && got_arg == &assigned_ev);
    CHECK(event_assign(&reuse_ev[0], base, -1, 0, on_reuse, &reuse_ev[0]) == 0);
    event_add(&reuse_ev[0], &ms);
    struct event *finalized_ev = event_new(base, -1, 0, on_never, &tag_finalized);
    CHECK(finalized_ev && event_get_callback_arg(finalized_ev) == &tag_finalized);
    CHECK(event_free_finalize(0, finalized_ev, on_finalized) == 0);
    d9_event_location(&once_site);
    CHECK(event_base_once(base, -1, EV_TIMEOUT, on_once, &tag_once, &ms) == 0);

    bev = bufferevent_socket_new(base, bev_sv[0], BEV_OPT_CLOSE_ON_FREE);
    bev_id = (uintptr_t)bev;
    bufferevent_setcb(bev, on_bev_read, NULL, on_bev_event, &tag_bev);
    bufferevent_enable(bev, EV_READ);

    memset(&listen_addr, 0, sizeof listen_addr);
    listen_addr.sin_family = AF_INET;
    listen_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listener = evconnlistener_new_bind(base, on_accept, &tag_listener,
                                       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 8,
                                       (struct sockaddr *)&listen_addr, sizeof listen_addr);
    CHECK(listener != NULL);
    socklen_t len = sizeof listen_addr;
    getsockname(evconnlistener_get_fd(listener), (struct sockaddr *)&listen_addr, &len);

    pthread_t thread;
    pthread_create(&thread, NULL, activator, NULL);
    CHECK(event_base_dispatch(base) == 1 || n.timer == N_TICKS); /* ends by loopbreak */
    pthread_join(thread, NULL);
    evconnlistener_free(listener);
    event_free(read_ev);
    event_base_free(base); /* assigned_ev was never freed: its task ends with the base */
    close(sv[0]);
    close(sv[1]);
    close(bev_sv[1]);
}

static void check_polls(const at_trace *t, const char *loc, const void *obj, long want) {
    at_check_polls(t, loc, obj, want, BASE_NAME);
}

int main(void) {
    sem_init(&activated, 0, 0);
    char *dir = at_mkdtemp("event");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 5;
    CHECK(d9_start(&cfg) == 0);
    long loop_tid = tid();
    run_workload();
    d9_stop();

    CHECK_EQ_U64(n.bad, 0);
    CHECK_EQ_U64(n.timer, N_TICKS);
    CHECK_EQ_U64(n.assigned, N_ACTIVE);
    CHECK_EQ_U64(n.once, 1);
    CHECK_EQ_U64(n.accept, 1);
    CHECK_EQ_U64(n.finalized, 1);
    CHECK_EQ_U64(n.bytes, N_TICKS);
    CHECK_EQ_U64(n.bev_bytes, N_TICKS);

    at_trace t;
    at_check_run(&t, d9_run_dir(), BASE_NAME, loop_tid);
    CHECK(at_parks_on_runtime(&t, BASE_NAME) >= 1);

    check_polls(&t, "on_timer", (void *)timer_id, n.timer);
    check_polls(&t, "on_readable", read_ev, n.readable);
    check_polls(&t, "on_assigned", &assigned_ev, n.assigned);
    check_polls(&t, "on_bev_read", (void *)bev_id, n.bev_read);
    CHECK_EQ_U64(at_polls(&t, "on_bev_event", 0), n.bev_event);
    check_polls(&t, "on_accept", listener, n.accept);
    CHECK_EQ_U64(at_polls(&t, "once-site", 0), n.once);
    CHECK_EQ_U64(at_polls(&t, "on_finalized", 0), n.finalized);
    CHECK_EQ_U64(at_distinct_tasks(&t, "on_timer"), 1);
    CHECK_EQ_U64(at_distinct_tasks(&t, "on_bev_read"), 1);

    /* spawns at creation with the callback's name, terminates at free / base free */
    at_check_lifetime(&t, at_task(&t, read_ev), "on_readable");
    at_check_lifetime(&t, at_task(&t, &assigned_ev), "on_assigned");
    at_check_lifetime(&t, at_task(&t, listener), "on_accept");
    at_check_lifetime(&t, at_task(&t, (void *)timer_id), "on_timer");
    at_check_lifetime(&t, at_task(&t, (void *)bev_id), "on_bev_read");
    at_check_lifetime(&t, at_task_polled_at(&t, "once-site"), "once-site");

    /* event_active from another thread wakes the event's task */
    at_check_outside_wakes(&t, at_task(&t, &assigned_ev), N_ACTIVE);

    /* an event assigned again is a new task each time */
    CHECK_EQ_U64(n.reuse, 2 * N_REUSE);
    CHECK_EQ_U64(at_tasks_of(&t, &reuse_ev[0], NULL), N_REUSE);
    CHECK_EQ_U64(at_tasks_of(&t, &reuse_ev[1], NULL), N_REUSE);
    CHECK_EQ_U64(at_distinct_tasks(&t, "on_reuse"), 2 * N_REUSE);
    at_check_task_identity(&t);

    /* sockets are woken by the poller each time their callbacks run */
    static const char *const io_locs[] = {"on_readable", "on_bev_read", "on_accept"};
    at_check_wakes(&t, io_locs, 3);

    at_free(&t);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_event_adapter");
}
