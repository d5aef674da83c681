/* The libuv adapter against Debian's shared libuv: a loop with a timer, idle, prepare and
 * check handles, TCP on 127.0.0.1 (listen, connect, write, read), async sends from another
 * thread, uv_queue_work and chained uv_fs_stat requests. The program counts its callbacks and
 * checks what each one received; then it reads the trace back and checks that the polls per
 * task and callback equal those counts, task ids and spawn locations, wakes, park/unpark on
 * the loop thread, and the pool requests' move from a pool thread to the loop thread. */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/uv.h"
#include "unit/test_source_util.h"

#define N_TIMER 5
#define N_IDLE 20
#define N_ASYNC 3
#define N_STAT 2
#define LOOP_NAME "uv-test"
#define N_REUSE 3

static uv_loop_t loop;
static uv_timer_t timer, reuse_timer[2], early;
static uv_idle_t idle;
static uv_prepare_t prepare;
static uv_check_t check;
static uv_async_t async;
static uv_tcp_t server, client, peer;
static uv_connect_t connect_req;
static uv_write_t write_req;
static uv_work_t work_req, early_work_req;
static uv_fs_t stat_req;
static char read_buf[64];

/* What each object's `data` must still be when its callback runs. */
static int tag_timer, tag_idle, tag_prepare, tag_check, tag_async, tag_server, tag_client,
    tag_peer, tag_connect, tag_write, tag_work, tag_stat;

static struct {
    int timer, idle, prepare, check, async, connection, connect, write, alloc, read, close;
    int after_work, stat, reuse, early, early_after_work;
    atomic_int work, early_work;
    int bad; /* a callback got another object, or its data changed */
} n;
static atomic_long work_tid;
static sem_t async_ran;
static int pending_parts = 7; /* timer, idle, async, tcp, work, fs, reuse */
static long bytes_read;

static long tid(void) { return (long)syscall(SYS_gettid); }

static void expect(const void *got, const void *want, const void *data, const void *tag) {
    if (got != want || data != tag) n.bad++;
}

static void on_close(uv_handle_t *h) {
    (void)h;
    n.close++;
}

static void part_done(void) {
    if (--pending_parts == 0) {
        uv_close((uv_handle_t *)&prepare, on_close);
        uv_close((uv_handle_t *)&check, on_close);
    }
}

static void on_timer(uv_timer_t *h) {
    expect(h, &timer, h->data, &tag_timer);
    if (++n.timer == N_TIMER) {
        uv_timer_stop(h);
        uv_close((uv_handle_t *)h, on_close);
        part_done();
    }
}

/* Two handles' memory, each closed and initialized again N_REUSE times, in turn: the close
 * callback of one starts the other. */
static void on_reuse_timer(uv_timer_t *h);
static void on_reuse_closed(uv_handle_t *h) {
    if (n.reuse == 2 * N_REUSE) {
        part_done();
        return;
    }
    uv_timer_t *other = &reuse_timer[h == (uv_handle_t *)&reuse_timer[0]];
    uv_timer_init(&loop, other);
    uv_timer_start(other, on_reuse_timer, 1, 0);
}

static void on_reuse_timer(uv_timer_t *h) {
    n.reuse++;
    uv_close((uv_handle_t *)h, on_reuse_closed);
}

/* Submitted before the recorder: a request is not tracked while nothing records (so that an
 * idle program pays nothing per request); its callbacks run, and it is not in the run. */
static void on_early_work(uv_work_t *req) {
    (void)req;
    atomic_fetch_add(&n.early_work, 1);
}

static void on_early_after_work(uv_work_t *req, int status) {
    if (req != &early_work_req || status != 0) n.bad++;
    n.early_after_work++;
}

/* Started before the recorder: its task spawns when the run starts. */
static void on_early(uv_timer_t *h) {
    n.early++;
    uv_close((uv_handle_t *)h, NULL);
}

static void on_idle(uv_idle_t *h) {
    expect(h, &idle, h->data, &tag_idle);
    if (++n.idle == N_IDLE) {
        uv_idle_stop(h);
        uv_close((uv_handle_t *)h, on_close);
        part_done();
    }
}

static void on_prepare(uv_prepare_t *h) {
    expect(h, &prepare, h->data, &tag_prepare);
    n.prepare++;
}

static void on_check(uv_check_t *h) {
    expect(h, &check, h->data, &tag_check);
    n.check++;
}

static void on_async(uv_async_t *h) {
    expect(h, &async, h->data, &tag_async);
    if (++n.async == N_ASYNC) {
        uv_close((uv_handle_t *)h, on_close);
        part_done();
    }
    sem_post(&async_ran);
}

/* The loop's thread: the sender waits until it sleeps in epoll_wait, so that the run has a
 * park however loaded the machine (the rest of the workload may never let the loop block: on
 * a busy machine its 1 ms timers are always due). Only the async handle keeps it waiting. */
static _Atomic long loop_tid_for_sender;

static void *async_sender(void *arg) {
    (void)arg;
    tt_wait_blocked_in((pid_t)atomic_load(&loop_tid_for_sender), SYS_epoll_wait,
                       (uint64_t)uv_backend_fd(&loop));
    for (int i = 0; i < N_ASYNC; i++) {
        uv_async_send(&async);
        sem_wait(&async_ran); /* sends coalesce: one callback per send only if we wait */
    }
    return NULL;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)suggested;
    expect(h, &peer, h->data, &tag_peer);
    n.alloc++;
    *buf = uv_buf_init(read_buf, sizeof read_buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    expect(s, &peer, s->data, &tag_peer);
    if (buf->base != read_buf) n.bad++;
    n.read++;
    if (nread > 0) bytes_read += nread;
    if (bytes_read >= 5 || nread < 0) {
        uv_close((uv_handle_t *)&peer, on_close);
        uv_close((uv_handle_t *)&client, on_close);
        uv_close((uv_handle_t *)&server, on_close);
        part_done();
    }
}

static void on_connection(uv_stream_t *s, int status) {
    expect(s, &server, s->data, &tag_server);
    n.connection++;
    if (status < 0) return;
    uv_tcp_init(&loop, &peer);
    peer.data = &tag_peer;
    if (uv_accept(s, (uv_stream_t *)&peer) == 0)
        uv_read_start((uv_stream_t *)&peer, on_alloc, on_read);
}

static void on_write(uv_write_t *req, int status) {
    expect(req, &write_req, req->data, &tag_write);
    if (status != 0) n.bad++;
    n.write++;
}

static void on_connect(uv_connect_t *req, int status) {
    expect(req, &connect_req, req->data, &tag_connect);
    if (req->handle != (uv_stream_t *)&client || client.data != &tag_client) n.bad++;
    n.connect++;
    if (status < 0) return;
    static char hello[] = "hello";
    uv_buf_t b = uv_buf_init(hello, 5);
    write_req.data = &tag_write;
    uv_write(&write_req, (uv_stream_t *)&client, &b, 1, on_write);
}

static void on_work(uv_work_t *req) {
    expect(req, &work_req, req->data, &tag_work);
    atomic_store(&work_tid, tid());
    atomic_fetch_add(&n.work, 1);
}

static void on_after_work(uv_work_t *req, int status) {
    expect(req, &work_req, req->data, &tag_work);
    if (status != 0) n.bad++;
    n.after_work++;
    part_done();
}

static void on_stat(uv_fs_t *req) {
    expect(req, &stat_req, req->data, &tag_stat);
    if (req->result != 0) n.bad++;
    uv_fs_req_cleanup(req);
    if (++n.stat < N_STAT) uv_fs_stat(&loop, &stat_req, "/", on_stat); /* the same request again */
    else part_done();
}

static void start_tcp(void) {
    struct sockaddr_in any;
    uv_ip4_addr("127.0.0.1", 0, &any);
    uv_tcp_init(&loop, &server);
    server.data = &tag_server;
    CHECK(uv_tcp_bind(&server, (const struct sockaddr *)&any, 0) == 0);
    CHECK(uv_listen((uv_stream_t *)&server, 8, on_connection) == 0);
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len);
    uv_tcp_init(&loop, &client);
    client.data = &tag_client;
    connect_req.data = &tag_connect;
    CHECK(uv_tcp_connect(&connect_req, &client, (const struct sockaddr *)&bound, on_connect) == 0);
}

/* An explicit location for one registration. */
static d9_loc prepare_site = {"prepare-site", "main", 0, 0};

static void run_workload(void) {

    uv_timer_init(&loop, &timer);
    timer.data = &tag_timer;
    uv_timer_start(&timer, on_timer, 1, 1);
    uv_timer_init(&loop, &reuse_timer[0]);
    uv_timer_start(&reuse_timer[0], on_reuse_timer, 1, 0);
    uv_idle_init(&loop, &idle);
    idle.data = &tag_idle;
    uv_idle_start(&idle, on_idle);
    uv_prepare_init(&loop, &prepare);
    prepare.data = &tag_prepare;
    d9_uv_location(&prepare_site);
    uv_prepare_start(&prepare, on_prepare);
    uv_check_init(&loop, &check);
    check.data = &tag_check;
    uv_check_start(&check, on_check);
    async.data = &tag_async; /* uv_async_init keeps data */
    CHECK(uv_async_init(&loop, &async, on_async) == 0);
    CHECK(async.data == &tag_async);
    start_tcp();
    work_req.data = &tag_work;
    CHECK(uv_queue_work(&loop, &work_req, on_work, on_after_work) == 0);
    stat_req.data = &tag_stat;
    CHECK(uv_fs_stat(&loop, &stat_req, "/", on_stat) == 0);

    pthread_t sender;
    atomic_store(&loop_tid_for_sender, tid());
    pthread_create(&sender, NULL, async_sender, NULL);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
    pthread_join(sender, NULL);
    CHECK(uv_loop_close(&loop) == 0);
}

int main(void) {
    sem_init(&async_ran, 0, 0);
    char *dir = at_mkdtemp("uv");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 5;
    CHECK(uv_loop_init(&loop) == 0);
    CHECK(d9_uv_instrument(&loop, LOOP_NAME) == 0);
    uv_timer_init(&loop, &early);
    uv_timer_start(&early, on_early, 1, 0);
    CHECK(uv_queue_work(&loop, &early_work_req, on_early_work, on_early_after_work) == 0);
    CHECK(d9_start(&cfg) == 0);
    long loop_tid = tid();

    run_workload();
    d9_stop();

    /* what the application saw */
    CHECK_EQ_U64(n.bad, 0);
    CHECK_EQ_U64(n.timer, N_TIMER);
    CHECK_EQ_U64(n.idle, N_IDLE);
    CHECK_EQ_U64(n.async, N_ASYNC);
    CHECK_EQ_U64(n.connection, 1);
    CHECK_EQ_U64(n.connect, 1);
    CHECK_EQ_U64(n.write, 1);
    CHECK(n.read >= 1 && n.alloc == n.read);
    CHECK_EQ_U64(atomic_load(&n.work), 1);
    CHECK_EQ_U64(n.after_work, 1);
    CHECK_EQ_U64(n.stat, N_STAT);
    CHECK_EQ_U64(n.close, 8); /* timer idle async peer client server prepare check */
    CHECK_EQ_U64(n.reuse, 2 * N_REUSE);
    CHECK_EQ_U64(n.early, 1);
    CHECK_EQ_U64(atomic_load(&n.early_work), 1);
    CHECK_EQ_U64(n.early_after_work, 1);
    CHECK(n.prepare > 0 && n.check > 0);
    CHECK(atomic_load(&work_tid) != 0 && atomic_load(&work_tid) != loop_tid);

    /* the loop's thread is worker LOOP_NAME #0, and it parked in epoll_wait */
    at_trace t;
    const at_worker *w = at_check_run(&t, d9_run_dir(), LOOP_NAME, (pid_t)loop_tid);
    uint32_t lw = w ? w->id : 255;
    size_t parks = at_parks_on_runtime(&t, LOOP_NAME);
    CHECK(parks >= 1);
    for (size_t i = 0; i < t.nparks; i++)
        if (t.parks[i].worker == lw) CHECK(t.parks[i].tid == (uint32_t)loop_tid);

    /* one poll per callback, with the task of its handle/request and the callback's name */
    at_check_polls(&t, "on_timer", &timer, n.timer, LOOP_NAME);
    at_check_polls(&t, "on_idle", &idle, n.idle, LOOP_NAME);
    at_check_polls(&t, "prepare-site", &prepare, n.prepare, LOOP_NAME);
    at_check_polls(&t, "on_check", &check, n.check, LOOP_NAME);
    at_check_polls(&t, "on_async", &async, n.async, LOOP_NAME);
    at_check_polls(&t, "on_connection", &server, n.connection, LOOP_NAME);
    at_check_polls(&t, "on_connect", &connect_req, n.connect, LOOP_NAME);
    at_check_polls(&t, "on_write", &write_req, n.write, LOOP_NAME);
    /* a stream's alloc callback is one poll with the read callback libuv calls right after it,
     * located at the read callback (uv_handle_alloc_begin) */
    CHECK_EQ_U64(at_polls(&t, "on_alloc", 0), 0);
    at_check_polls(&t, "on_read", &peer, n.read, LOOP_NAME);
    at_check_polls(&t, "on_after_work", &work_req, n.after_work, LOOP_NAME);
    at_check_polls(&t, "on_stat", &stat_req, n.stat, LOOP_NAME);
    CHECK_EQ_U64(at_polls(&t, "on_close", 0), n.close);
    CHECK_EQ_U64(at_distinct_tasks(&t, "on_close"), n.close);
    CHECK_EQ_U64(at_polls(&t, "on_close", at_task(&t, &timer)), 1);

    /* pool requests: the pool part on a "uv-threadpool" worker, then the loop thread */
    at_check_polls(&t, "on_work", &work_req, 1, "uv-threadpool");
    at_check_polls(&t, "uv_fs_stat", &stat_req, N_STAT, "uv-threadpool");
    CHECK_EQ_U64(at_wakes_of(&t, at_task(&t, &work_req)), 1);
    CHECK_EQ_U64(at_wakes_of(&t, at_task(&t, &stat_req)), N_STAT);
    for (size_t i = 0; i < t.nwakes; i++) {
        if (t.wakes[i].woken != at_task(&t, &work_req)) continue;
        const at_worker *pw = at_worker_by_id(&t, t.wakes[i].worker);
        CHECK(pw && strcmp(pw->runtime, "uv-threadpool") == 0);
        CHECK(t.wakes[i].waker == 0); /* from the pool thread once its poll ended */
    }

    /* async sends from a thread that is no worker wake the async handle's task */
    at_check_outside_wakes(&t, at_task(&t, &async), N_ASYNC);

    /* spawns at the first registration, terminates at close / completion */
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &timer), "on_timer"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &idle), "on_idle"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &prepare), "prepare-site"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &async), "on_async"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &server), "on_connection"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &peer), "on_read"), 1);
    /* the client handle's only callback was its close callback */
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &client), "on_close"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &write_req), "on_write"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &work_req), "on_work"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &stat_req), "on_stat"), 1); /* reused in its callback */
    const void *ended[] = {&timer, &idle, &prepare, &check, &async, &server, &client, &peer,
                           &connect_req, &write_req, &work_req, &stat_req};
    for (size_t i = 0; i < sizeof ended / sizeof *ended; i++)
        CHECK_EQ_U64(at_terminates(&t, at_task(&t, ended[i])), 1);

    /* a handle closed and initialized again at the same address is a new task each time */
    CHECK_EQ_U64(at_tasks_of(&t, &reuse_timer[0], NULL), N_REUSE);
    CHECK_EQ_U64(at_tasks_of(&t, &reuse_timer[1], NULL), N_REUSE);
    CHECK_EQ_U64(at_polls(&t, "on_reuse_timer", 0), 2 * N_REUSE);
    CHECK_EQ_U64(at_distinct_tasks(&t, "on_reuse_timer"), 2 * N_REUSE);
    at_check_task_identity(&t);
    /* a handle registered before the recorder started spawns when the run starts */
    at_check_polls(&t, "on_early", &early, n.early, LOOP_NAME);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &early), "on_early"), 1);
    /* a request submitted before the start is not in the run (not tracked while idle) */
    CHECK_EQ_U64(at_polls(&t, "on_early_after_work", 0), 0);
    CHECK_EQ_U64(at_polls(&t, "on_early_work", 0), 0);

    /* wakes: the pool's and the async sender's come from no task; reading, accepting sockets
     * are woken by the poller each time */
    static const char *const io_locs[] = {"on_connection", "on_read"};
    at_check_wakes(&t, io_locs, 2);

    at_free(&t);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_uv_adapter");
}
