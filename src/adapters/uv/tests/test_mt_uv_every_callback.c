/* Every callback is a poll, from the first to the last: the shortest libuv program (one
 * repeating 1 ms timer and nothing else, 300 callbacks), recorded through the adapter from
 * d9_start to d9_stop. Its last callback queues one uv_queue_work item, whose completion is
 * then the loop's last callback before uv_run returns. The trace holds exactly one poll per
 * callback, the item's work poll on a pool thread, and the loop's first poll is the timer's,
 * its last the item's completion. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/uv.h"

#define CALLS 300
#define LOOP_NAME "uv-every"

static int calls, after_work_calls;
static _Atomic int work_calls;
static uv_work_t work_req;

static void on_work(uv_work_t *req) {
    (void)req;
    work_calls++;
}

static void on_after_work(uv_work_t *req, int status) {
    (void)req;
    (void)status;
    after_work_calls++;
}

static void on_timer(uv_timer_t *t) {
    if (++calls < CALLS) return;
    uv_timer_stop(t);
    uv_close((uv_handle_t *)t, NULL);
    CHECK(uv_queue_work(t->loop, &work_req, on_work, on_after_work) == 0);
}

int main(void) {
    char *dir = at_mkdtemp("uv-every");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    uv_loop_t loop;
    CHECK(uv_loop_init(&loop) == 0);
    CHECK(d9_uv_instrument(&loop, LOOP_NAME) == 0);
    CHECK(d9_start(&cfg) == 0);
    uv_timer_t timer;
    uv_timer_init(&loop, &timer);
    uv_timer_start(&timer, on_timer, 1, 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    d9_stop();
    CHECK_EQ_U64(calls, CALLS);
    CHECK_EQ_U64(work_calls, 1);
    CHECK_EQ_U64(after_work_calls, 1);

    at_trace t;
    const at_worker *w = at_check_run(&t, d9_run_dir(), LOOP_NAME, (pid_t)syscall(SYS_gettid));
    CHECK_EQ_U64(at_polls(&t, "on_timer", 0), CALLS);
    CHECK_EQ_U64(at_polls_on_runtime(&t, "on_work", "uv-threadpool"), 1);
    CHECK_EQ_U64(at_polls(&t, "on_after_work", 0), 1);
    const char *first = "", *last = "";
    CHECK(at_first_last_polls(&t, w ? w->id : 255, &first, &last));
    CHECK_STR(first, "on_timer");
    CHECK_STR(last, "on_after_work");
    at_free(&t);
    CHECK(uv_loop_close(&loop) == 0);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_uv_every_callback");
}
