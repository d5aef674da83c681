/* Trampolines only while recording (lazy_wrap.h), against Debian's libuv. One loop runs on its
 * own thread through six phases that the main thread drives: never started, started with
 * recording disabled (DIAL9_ENABLED=0), recording, paused (d9_set_enabled(false)), resumed,
 * stopped. Two repeating timers run in each phase: `early`, started before anything was
 * started, and `late`, started by the loop in the first recording phase; `ctl`, the async
 * handle that carries the main thread's commands, is a third handle made before the start.
 *
 * Checked: whoever calls each callback (libuv itself, or the adapter's trampoline, from the
 * callback's return address): libuv while nothing records, the adapter while recording. And
 * in the trace, one poll per callback of the recording phases for each handle, none for the
 * others, each task spawned once. Between phases the timers are stopped, so that no callback
 * runs while the recorder's state changes (callbacks of the loop turn in which recording
 * starts are not in the run: that is the one price of lazy wrapping). */
#include <dlfcn.h>
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

enum { NEVER, DISABLED, ON, PAUSED, RESUMED, STOPPED, PHASES };
static const char *const phase_name[PHASES] = {"never started", "disabled", "recording",
                                               "paused", "resumed", "stopped"};
static bool recording(int p) { return p == ON || p == RESUMED; }

enum { CMD_GO, CMD_QUIET, CMD_EXIT };
#define PER_PHASE 3 /* callbacks of each timer per phase, at least */

static uv_loop_t loop;
static uv_timer_t early, late;
static uv_async_t ctl;
static bool late_started;
static _Atomic int cmd, cmd_phase;
static sem_t acked, phase_done;

/* Written on the loop's thread only; read by the main thread after the loop ended. */
static int phase = NEVER;
static bool phase_signalled;
static struct {
    int calls, via_adapter;
} cb[3][PHASES]; /* early, late, ctl */

/* Whether the callback that calls this was called by the adapter (a trampoline in
 * libdial9-uv.so) rather than by libuv. */
static bool called_by_adapter(void *return_address) {
    Dl_info info;
    return dladdr(return_address, &info) && info.dli_fname &&
           strstr(info.dli_fname, "libdial9-uv") != NULL;
}

static void count(int which, void *return_address) {
    cb[which][phase].calls++;
    if (called_by_adapter(return_address)) cb[which][phase].via_adapter++;
    if (!phase_signalled && cb[0][phase].calls >= PER_PHASE &&
        (!late_started || cb[1][phase].calls >= PER_PHASE)) {
        phase_signalled = true;
        sem_post(&phase_done);
    }
}

static __attribute__((noinline)) void on_early(uv_timer_t *h) {
    (void)h;
    count(0, __builtin_return_address(0));
}

static __attribute__((noinline)) void on_late(uv_timer_t *h) {
    (void)h;
    count(1, __builtin_return_address(0));
}

/* A handle made and closed while nothing records: its entry must go at uv_close (it is freed
 * in its close callback; a stale entry would be spawned at the start, and swapped). */
static void *gone;
static void on_gone_timer(uv_timer_t *h) { (void)h; }
static void free_handle(uv_handle_t *h) { free(h); }
static void make_and_close_a_handle(void) {
    uv_timer_t *t = malloc(sizeof *t);
    uv_timer_init(&loop, t);
    uv_timer_start(t, on_gone_timer, 1000, 0);
    gone = t;
    uv_close((uv_handle_t *)t, free_handle);
}

static __attribute__((noinline)) void on_ctl(uv_async_t *h) {
    (void)h;
    int c = atomic_load(&cmd);
    if (c == CMD_GO) phase = atomic_load(&cmd_phase); /* this callback runs in the new state */
    cb[2][phase].calls++;
    if (called_by_adapter(__builtin_return_address(0))) cb[2][phase].via_adapter++;
    switch (c) {
    case CMD_GO:
        phase_signalled = false;
        if (phase == NEVER) make_and_close_a_handle();
        uv_timer_again(&early);
        if (phase == ON && !late_started) {
            uv_timer_init(&loop, &late); /* registered while recording */
            uv_timer_start(&late, on_late, 1, 1);
            late_started = true;
        } else if (late_started) {
            uv_timer_again(&late);
        }
        break;
    case CMD_QUIET:
        uv_timer_stop(&early);
        if (late_started) uv_timer_stop(&late);
        break;
    case CMD_EXIT:
        uv_close((uv_handle_t *)&early, NULL);
        if (late_started) uv_close((uv_handle_t *)&late, NULL);
        uv_close((uv_handle_t *)&ctl, NULL);
        break;
    }
    sem_post(&acked);
}

static _Atomic long loop_tid;

/* Carry out command `c` on the loop, and wait until the loop is back in its poller: the poll
 * of on_ctl has ended then, so the recorder's state may change (a change inside a poll would
 * lose its end). */
static void command(int c, int p) {
    atomic_store(&cmd, c);
    atomic_store(&cmd_phase, p);
    uv_async_send(&ctl);
    sem_wait(&acked);
    if (c != CMD_EXIT)
        tt_wait_blocked_in((pid_t)atomic_load(&loop_tid), SYS_epoll_wait,
                           (uint64_t)uv_backend_fd(&loop));
}

static void *loop_main(void *arg) {
    (void)arg;
    atomic_store(&loop_tid, (long)gettid());
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

int main(void) {
    sem_init(&acked, 0, 0);
    sem_init(&phase_done, 0, 0);
    char *dir = at_mkdtemp("uv-lazy");
    CHECK(dir != NULL);
    d9_config cfg, disabled;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 5;
    disabled = cfg;
    disabled.enabled = false;

    CHECK(uv_loop_init(&loop) == 0);
    CHECK(d9_uv_instrument(&loop, "lazy") == 0);
    CHECK(uv_async_init(&loop, &ctl, on_ctl) == 0);
    uv_timer_init(&loop, &early);
    uv_timer_start(&early, on_early, 1, 1); /* registered before any start */
    uv_timer_stop(&early);                   /* runs from the first phase's "go" on */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, loop_main, NULL) == 0);

    for (int p = NEVER; p < PHASES; p++) {
        switch (p) {
        case DISABLED: CHECK(d9_start(&disabled) == 0); break;
        case ON:
            d9_stop();
            CHECK(d9_start(&cfg) == 0);
            break;
        case PAUSED: d9_set_enabled(false); break;
        case RESUMED: d9_set_enabled(true); break;
        case STOPPED: d9_stop(); break;
        default: break;
        }
        command(CMD_GO, p);
        sem_wait(&phase_done);
        command(CMD_QUIET, p);
    }
    command(CMD_EXIT, STOPPED);
    pthread_join(th, NULL);
    CHECK(uv_loop_close(&loop) == 0);

    /* who called the callbacks: libuv while nothing records, the adapter while recording */
    static const char *const names[3] = {"early", "late", "ctl"};
    for (int p = NEVER; p < PHASES; p++)
        for (int h = 0; h < 3; h++) {
            if (h == 1 && p < ON) continue; /* not started yet */
            int want = recording(p) ? cb[h][p].calls : 0;
            if (cb[h][p].via_adapter != want)
                fprintf(stderr, "%s, %s: %d of %d callbacks through the adapter, want %d\n",
                        names[h], phase_name[p], cb[h][p].via_adapter, cb[h][p].calls, want);
            CHECK_EQ_U64(cb[h][p].via_adapter, want);
            if (h < 2) CHECK(cb[h][p].calls >= PER_PHASE);
        }

    /* one poll per callback of the recording phases, none of the others */
    at_trace t;
    CHECK(at_load(d9_run_dir(), &t) == 0);
    CHECK_EQ_U64(t.nesting_errors, 0);
    CHECK_EQ_U64(t.open_polls, 0);
    /* (not t.park_errors: the pause and the stop come while the loop is parked in its poller,
     * and an unpark after them is not recorded, by the recorder's rule) */
    CHECK(at_parks_on_runtime(&t, "lazy") >= 1);
    bool loop_worker = false;
    for (size_t i = 0; i < t.nworkers; i++)
        loop_worker |= strcmp(t.workers[i].runtime, "lazy") == 0 &&
                       t.workers[i].tid == (uint32_t)atomic_load(&loop_tid);
    CHECK(loop_worker);
    int want_early = cb[0][ON].calls + cb[0][RESUMED].calls;
    int want_late = cb[1][ON].calls + cb[1][RESUMED].calls;
    int want_ctl = cb[2][ON].calls + cb[2][RESUMED].calls;
    CHECK_EQ_U64(at_polls(&t, "on_early", 0), want_early);
    CHECK_EQ_U64(at_polls(&t, "on_late", 0), want_late);
    CHECK_EQ_U64(at_polls(&t, "on_ctl", 0), want_ctl);
    CHECK_EQ_U64(at_polls(&t, "on_early", at_task(&t, &early)), want_early);
    CHECK_EQ_U64(at_polls(&t, "on_late", at_task(&t, &late)), want_late);
    CHECK_EQ_U64(at_polls(&t, "on_ctl", at_task(&t, &ctl)), want_ctl);
    CHECK_EQ_U64(at_polls_on_runtime(&t, "on_early", "lazy"), want_early);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &early), "on_early"), 1); /* at the start */
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &late), "on_late"), 1);
    CHECK_EQ_U64(at_spawns(&t, at_task(&t, &ctl), "on_ctl"), 1);
    CHECK_EQ_U64(at_tasks_of(&t, gone, NULL), 0);
    at_check_task_identity(&t);
    at_free(&t);

    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_uv_lazy");
}
