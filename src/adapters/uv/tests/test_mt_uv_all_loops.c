/* "All loops" mode, as the zero-code preload shim will use it: the adapter's objects are
 * linked into this executable (its wrappers come first in lookup order, like a preloaded
 * library), d9_adapters_instrument_all(true) is flipped before the loop exists, and the loop
 * is never instrumented explicitly. Then even libuv's internal handles are recorded: the pool's
 * completion handle (wq_async, callback uv__work_done) runs the after-work and fs callbacks
 * inside its own callback, so the polls must come out split, never nested. Also checks the
 * loop's default name, and that the pool requests still move between threads. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "check.h"
#include "dial9/uv.h"
#include "instrument_all.h"

#define N_TIMER 3

static uv_loop_t loop;
static uv_timer_t timer;
static uv_work_t work_req;
static uv_fs_t stat_req;
static int n_timer, n_work, n_after, n_stat, bad;

static void on_timer(uv_timer_t *h) {
    if (h != &timer) bad++;
    if (++n_timer == N_TIMER) uv_close((uv_handle_t *)h, NULL);
}

static void on_work(uv_work_t *req) {
    if (req != &work_req) bad++;
    __atomic_add_fetch(&n_work, 1, __ATOMIC_RELAXED);
}

static void on_after_work(uv_work_t *req, int status) {
    if (req != &work_req || status != 0) bad++;
    n_after++;
}

static void on_stat(uv_fs_t *req) {
    if (req != &stat_req || req->result != 0) bad++;
    n_stat++;
    uv_fs_req_cleanup(req);
}

/* On `worker`, in that thread's own order (the pool threads' polls interleave with it in
 * the global order), a poll of `task`, then one at `inner`, then `task` again. */
static bool split_around(const at_trace *t, uint32_t worker, uint64_t task, const char *inner) {
    const at_poll *before = NULL, *middle = NULL;
    for (size_t i = 0; i < t->npolls; i++) {
        const at_poll *p = &t->polls[i];
        if (p->worker != worker) continue;
        if (before && before->task == task && strcmp(middle->loc, inner) == 0 && p->task == task)
            return true;
        before = middle;
        middle = p;
    }
    return false;
}

int main(void) {
    d9_adapters_instrument_all(true);
    char *dir = at_mkdtemp("uv-all");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 5;
    CHECK(d9_start(&cfg) == 0);

    CHECK(uv_loop_init(&loop) == 0);
    uv_timer_init(&loop, &timer);
    uv_timer_start(&timer, on_timer, 1, 1);
    CHECK(uv_queue_work(&loop, &work_req, on_work, on_after_work) == 0);
    CHECK(uv_fs_stat(&loop, &stat_req, "/", on_stat) == 0);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
    CHECK(uv_loop_close(&loop) == 0);
    d9_stop();

    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(n_timer, N_TIMER);
    CHECK_EQ_U64(n_after, 1);
    CHECK_EQ_U64(n_stat, 1);

    at_trace t;
    CHECK(at_load(d9_run_dir(), &t) == 0);
    CHECK_EQ_U64(t.nesting_errors, 0);
    CHECK_EQ_U64(t.park_errors, 0);
    CHECK_EQ_U64(t.open_polls, 0);
    CHECK(at_parks_on_runtime(&t, "uv") >= 1);
    CHECK_EQ_U64(at_polls_on_runtime(&t, "on_timer", "uv"), N_TIMER);
    uint64_t timer_task, work_task, stat_task, wq_async;
    CHECK_EQ_U64(at_tasks_of(&t, &timer, &timer_task), 1);
    CHECK_EQ_U64(at_tasks_of(&t, &work_req, &work_task), 1);
    CHECK_EQ_U64(at_tasks_of(&t, &stat_req, &stat_task), 1);
    CHECK_EQ_U64(at_tasks_of(&t, &loop.wq_async, &wq_async), 1);
    CHECK_EQ_U64(at_polls(&t, "on_timer", timer_task), N_TIMER);
    CHECK_EQ_U64(at_polls_on_runtime(&t, "on_work", "uv-threadpool"), 1);
    CHECK_EQ_U64(at_polls_on_runtime(&t, "uv_fs_stat", "uv-threadpool"), 1);
    CHECK_EQ_U64(at_polls(&t, "on_after_work", work_task), 1);
    CHECK_EQ_U64(at_polls(&t, "on_stat", stat_task), 1);
    CHECK_EQ_U64(at_polls_on_runtime(&t, "on_after_work", "uv"), 1);

    /* libuv's internal completion handle is a task too; its poll is split around the
     * application's completion callbacks that it calls */
    CHECK(at_polls(&t, NULL, wq_async) >= 2);
    const at_worker *loop_worker = NULL;
    for (size_t i = 0; i < t.nworkers; i++)
        if (strcmp(t.workers[i].runtime, "uv") == 0) loop_worker = &t.workers[i];
    CHECK(loop_worker && loop_worker->tid == (uint32_t)gettid());
    CHECK(loop_worker && split_around(&t, loop_worker->id, wq_async, "on_after_work"));
    /* pool threads wake the completion handle, and the loop's own handles end with it */
    CHECK(at_wakes_of(&t, wq_async) >= 1);
    CHECK_EQ_U64(at_terminates(&t, wq_async), 1);

    at_free(&t);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_uv_all_loops");
}
