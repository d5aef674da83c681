/* libuv programs as short as a first try, for test_preload_every_callback.sh: each mode runs
 * one loop on the main thread (or in a forked child) and prints how many times each of its
 * callbacks ran; the trace must hold exactly that many polls of each. No dial9 API: the shim
 * is what is under test.
 *   timer N    N repeating 1 ms timers, 300 callbacks each, and nothing else
 *   idle       one idle handle, 300 callbacks, and nothing else
 *   work       40 uv_queue_work items queued before uv_run: the loop's first callbacks are on
 *              the pool, and the last item's completion is the loop's last callback
 *   fork-timer a forked child runs `timer 1` (DIAL9_TRACE_CHILDREN=1: a run of its own) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#define PER_HANDLE 300
#define WORK_ITEMS 40

typedef struct counted_timer {
    uv_timer_t timer;
    int calls;
} counted_timer;

static int timer_calls, idle_calls, after_work_calls;
static int work_calls; /* on pool threads */

static void on_timer(uv_timer_t *t) {
    timer_calls++;
    if (++((counted_timer *)t)->calls == PER_HANDLE) uv_timer_stop(t);
}

static void on_idle(uv_idle_t *h) {
    if (++idle_calls == PER_HANDLE) uv_idle_stop(h);
}

static void on_work(uv_work_t *req) {
    (void)req;
    __atomic_fetch_add(&work_calls, 1, __ATOMIC_RELAXED);
}

static void on_after_work(uv_work_t *req, int status) {
    (void)req;
    (void)status;
    after_work_calls++;
}

static int run_timers(int n) {
    counted_timer *timers = calloc((size_t)n, sizeof *timers);
    if (!timers) return 1;
    for (int i = 0; i < n; i++) {
        uv_timer_init(uv_default_loop(), &timers[i].timer);
        uv_timer_start(&timers[i].timer, on_timer, 1, 1);
    }
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
    printf("on_timer %d\n", timer_calls);
    free(timers);
    return 0;
}

static int run_idle(void) {
    uv_idle_t idle;
    uv_idle_init(uv_default_loop(), &idle);
    uv_idle_start(&idle, on_idle);
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
    printf("on_idle %d\n", idle_calls);
    return 0;
}

static int run_work(void) {
    static uv_work_t reqs[WORK_ITEMS];
    for (int i = 0; i < WORK_ITEMS; i++)
        if (uv_queue_work(uv_default_loop(), &reqs[i], on_work, on_after_work) != 0) return 1;
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
    printf("on_work %d\non_after_work %d\n", __atomic_load_n(&work_calls, __ATOMIC_RELAXED),
           after_work_calls);
    return 0;
}

static int run_forked_timer(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) exit(run_timers(1));
    int status;
    if (waitpid(pid, &status, 0) != pid) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "timer") && argc > 2) return run_timers(atoi(argv[2]));
    if (!strcmp(mode, "idle")) return run_idle();
    if (!strcmp(mode, "work")) return run_work();
    if (!strcmp(mode, "fork-timer")) return run_forked_timer();
    fprintf(stderr, "usage: %s timer N | idle | work | fork-timer\n", argv[0]);
    return 2;
}
