/* More watchers than the adapter has cells (ev_watcher_cell.h: 16384, two places a watcher):
 * those without a cell find their callback through the side table, and every watcher, with a
 * cell or without, calls its own callback once with its own data.
 * Then again with the same watchers restarted, so that cells freed by the first round are
 * taken by other watchers. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/ev.h"

#define WATCHERS 40000 /* more than 2 x 16384: many watchers have no cell */
#define LOOP_NAME "ev-cells"

static ev_timer timers[WATCHERS];
static int calls[WATCHERS];
static long wrong_data;

static void on_cell_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)revents;
    ev_timer_stop(loop, w); /* the application's stop: its cell is freed now */
    int *mine = w->data;
    if (mine != &calls[w - timers]) wrong_data++;
    else (*mine)++;
}

static void run_round(struct ev_loop *loop) {
    for (int i = 0; i < WATCHERS; i++) {
        /* due at once, repeating (a one-shot timer is stopped by libev and fed again, which
         * moves it to a cell freed meanwhile): the cells stay taken until the callbacks */
        ev_timer_init(&timers[i], on_cell_timer, 0., 3600.);
        timers[i].data = &calls[i];
        ev_timer_start(loop, &timers[i]);
    }
    ev_run(loop, 0);
}

int main(void) {
    char *dir = at_mkdtemp("ev-cells");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    /* a round's 40 000 callbacks (~4 MB of records) fit in the thread's buffer whether or not
     * the collector drains meanwhile: with the default 1 MB a busy host dropped some, and a
     * poll's lost end is a nesting error */
    cfg.buffer_kb = 32 * 1024;
    cfg.memory_budget_mb = 128;
    struct ev_loop *loop = ev_loop_new(0);
    CHECK(loop != NULL);
    CHECK(d9_ev_instrument(loop, LOOP_NAME) == 0);
    CHECK(d9_start(&cfg) == 0);
    run_round(loop);
    run_round(loop);
    d9_stop();
    CHECK_EQ_U64(wrong_data, 0);
    int wrong = 0;
    for (int i = 0; i < WATCHERS; i++) wrong += calls[i] != 2;
    CHECK_EQ_U64(wrong, 0);

    /* the run is well formed, nothing lost: a poll per callback */
    at_trace t;
    at_check_run(&t, d9_run_dir(), LOOP_NAME, (pid_t)syscall(SYS_gettid));
    CHECK_EQ_U64(t.dropped, 0);
    CHECK_EQ_U64(t.npolls, 2 * WATCHERS);
    at_free(&t);
    ev_loop_destroy(loop);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_ev_watcher_cells");
}
