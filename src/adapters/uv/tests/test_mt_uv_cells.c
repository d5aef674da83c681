/* The cells the libuv adapter keeps in libuv's reserved words (uv_handle_cell.h,
 * uv_request_cell.h) follow every change of what they stand for:
 *   - a timer whose callback is replaced from inside its own callback calls, and is recorded
 *     at, the new callback from the next expiry on (a stale cell would call the old one);
 *   - a timer closed and initialized again at the same address is a new task, whose polls
 *     follow its own spawn (a stale cell would poll the terminated task);
 *   - a handle whose cell the application overwrote still has its callbacks called and
 *     recorded (the side table is the fallback);
 *   - requests reusing one uv_write_t, each submitted from the previous one's completion, are
 *     one task going on (the cell's task is the continued one), ended once. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/uv.h"

#define LOOP_NAME "uv-cells"
#define TICKS 5
#define WRITES 6

static uv_loop_t loop;
static uv_timer_t swapped, reborn, overwritten;
static int ticks_a, ticks_b, reborn_first, reborn_second, overwritten_ticks, writes_done;
static uv_pipe_t stream;
static uv_write_t write_req;
static uv_buf_t out = {.base = "w", .len = 1};

static void tick_b(uv_timer_t *t) {
    if (++ticks_b == TICKS) uv_close((uv_handle_t *)t, NULL);
}

static void tick_a(uv_timer_t *t) {
    if (++ticks_a == TICKS) uv_timer_start(t, tick_b, 1, 1); /* from inside its own callback */
    else if (ticks_a > TICKS) uv_close((uv_handle_t *)t, NULL); /* called after its replacement */
}

static void reborn_second_tick(uv_timer_t *t) {
    if (++reborn_second == TICKS) uv_close((uv_handle_t *)t, NULL);
}

static void reborn_closed(uv_handle_t *h) {
    /* the same memory, a new handle */
    CHECK(uv_timer_init(&loop, (uv_timer_t *)h) == 0);
    CHECK(uv_timer_start((uv_timer_t *)h, reborn_second_tick, 1, 1) == 0);
}

static void reborn_first_tick(uv_timer_t *t) {
    if (++reborn_first == TICKS) uv_close((uv_handle_t *)t, reborn_closed);
}

static void overwritten_tick(uv_timer_t *t) {
    if (++overwritten_ticks == TICKS) uv_close((uv_handle_t *)t, NULL);
}

static void written(uv_write_t *req, int status) {
    CHECK(status == 0);
    if (++writes_done < WRITES) {
        CHECK(uv_write(req, req->handle, &out, 1, written) == 0); /* the same request again */
        return;
    }
    uv_close((uv_handle_t *)req->handle, NULL);
}

int main(void) {
    char *dir = at_mkdtemp("uv-cells");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(uv_loop_init(&loop) == 0);
    CHECK(d9_uv_instrument(&loop, LOOP_NAME) == 0);
    CHECK(d9_start(&cfg) == 0);

    CHECK(uv_timer_init(&loop, &swapped) == 0);
    CHECK(uv_timer_start(&swapped, tick_a, 1, 1) == 0);
    CHECK(uv_timer_init(&loop, &reborn) == 0);
    CHECK(uv_timer_start(&reborn, reborn_first_tick, 1, 1) == 0);
    CHECK(uv_timer_init(&loop, &overwritten) == 0);
    CHECK(uv_timer_start(&overwritten, overwritten_tick, 1, 1) == 0);
    memset(&overwritten.u, 0xa5, sizeof overwritten.u); /* libuv leaves these to whoever */

    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(uv_pipe_init(&loop, &stream, 0) == 0);
    CHECK(uv_pipe_open(&stream, sv[0]) == 0);
    CHECK(uv_write(&write_req, (uv_stream_t *)&stream, &out, 1, written) == 0);

    uv_run(&loop, UV_RUN_DEFAULT);
    d9_stop();
    close(sv[1]);
    CHECK_EQ_U64(ticks_a, TICKS);
    CHECK_EQ_U64(ticks_b, TICKS);
    CHECK_EQ_U64(reborn_first, TICKS);
    CHECK_EQ_U64(reborn_second, TICKS);
    CHECK_EQ_U64(overwritten_ticks, TICKS);
    CHECK_EQ_U64(writes_done, WRITES);

    at_trace t;
    at_check_run(&t, d9_run_dir(), LOOP_NAME, (pid_t)syscall(SYS_gettid));
    CHECK_EQ_U64(at_polls(&t, "tick_a", 0), TICKS);
    CHECK_EQ_U64(at_polls(&t, "tick_b", 0), TICKS);
    uint64_t first_life = 0, second_life = 0;
    CHECK_EQ_U64(at_tasks_of(&t, &reborn, &second_life), 2);
    CHECK_EQ_U64(at_polls(&t, "reborn_second_tick", second_life), TICKS);
    CHECK_EQ_U64(at_distinct_tasks(&t, "reborn_first_tick"), 1);
    CHECK_EQ_U64(at_distinct_tasks(&t, "reborn_second_tick"), 1);
    CHECK(at_polls(&t, "reborn_first_tick", second_life) == 0);
    (void)first_life;
    CHECK_EQ_U64(at_polls(&t, "overwritten_tick", 0), TICKS);
    uint64_t write_task = 0;
    CHECK_EQ_U64(at_tasks_of(&t, &write_req, &write_task), 1);
    CHECK_EQ_U64(at_polls(&t, "written", write_task), WRITES);
    CHECK_EQ_U64(at_terminates(&t, write_task), 1);
    at_identity id;
    at_identity_check(&t, &id);
    CHECK_EQ_U64(id.polls_without_spawn, 0);
    CHECK_EQ_U64(id.polls_after_terminate, 0);
    CHECK_EQ_U64(id.terminates_repeated, 0);
    at_free(&t);
    CHECK(uv_loop_close(&loop) == 0);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_uv_cells");
}
