/* A pause while the loop waits in its poller, against Debian's libuv: the park recorded before
 * the pause ends with its unpark, recorded when the poller returns during the pause (the
 * readers would otherwise drop that park as never ended). A helper thread drives it: it waits
 * until the loop's thread is blocked in epoll_wait (its current system call, from
 * /proc/self/task/TID/syscall: no sleep decides anything), pauses, and wakes the loop with an
 * async send; then, with the loop parked again while paused, resumes and wakes it once more.
 * Checked in the trace: every park of the loop's worker has its unpark, the pause's park among
 * them, and nothing that happened in the pause but that unpark is there. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "adapter_trace.h"
#include "adapter_trace_checks.h"
#include "check.h"
#include "dial9/uv.h"

#define LOOP_NAME "uv-pause"

static uv_loop_t loop;
static uv_async_t wake;
static int calls;      /* loop thread's */
static sem_t ran;      /* a wake's callback ran */
static pid_t loop_tid; /* set before the helper starts */
static bool parked_seen[2];

static void on_wake(uv_async_t *h) {
    if (++calls == 2) uv_close((uv_handle_t *)h, NULL);
    sem_post(&ran);
}

static bool is_epoll_wait(long nr) {
#ifdef SYS_epoll_wait
    if (nr == SYS_epoll_wait) return true;
#endif
#ifdef SYS_epoll_pwait2
    if (nr == SYS_epoll_pwait2) return true;
#endif
    return nr == SYS_epoll_pwait;
}

/* Whether thread tid is blocked in an epoll wait, waiting for it up to 30 s. */
static bool wait_until_in_epoll(pid_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    for (int i = 0; i < 30000; i++) {
        FILE *f = fopen(path, "r");
        long nr = -1;
        if (f) {
            if (fscanf(f, "%ld", &nr) != 1) nr = -1; /* "running" */
            fclose(f);
        }
        if (is_epoll_wait(nr)) return true;
        usleep(1000);
    }
    return false;
}

static void *driver(void *arg) {
    (void)arg;
    parked_seen[0] = wait_until_in_epoll(loop_tid);
    d9_set_enabled(false);
    uv_async_send(&wake); /* the unpark falls in the pause */
    sem_wait(&ran);
    parked_seen[1] = wait_until_in_epoll(loop_tid); /* parked while paused: no park recorded */
    d9_set_enabled(true);
    uv_async_send(&wake); /* its callback is recorded; its unpark ends no recorded park */
    sem_wait(&ran);
    return NULL;
}

int main(void) {
    sem_init(&ran, 0, 0);
    char *dir = at_mkdtemp("uv-pause");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedule_profile = false; /* the hooks' events only */
    CHECK(uv_loop_init(&loop) == 0);
    CHECK(d9_uv_instrument(&loop, LOOP_NAME) == 0);
    CHECK(uv_async_init(&loop, &wake, on_wake) == 0);
    CHECK(d9_start(&cfg) == 0);
    loop_tid = (pid_t)syscall(SYS_gettid);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, driver, NULL) == 0);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
    pthread_join(th, NULL);
    d9_stop();
    CHECK(parked_seen[0] && parked_seen[1]);
    CHECK_EQ_U64(calls, 2);

    at_trace t;
    const at_worker *w = at_check_run(&t, d9_run_dir(), LOOP_NAME, loop_tid);
    uint32_t lw = w ? w->id : 255;
    size_t parks = 0, ended = 0;
    for (size_t i = 0; i < t.nparks; i++) {
        if (t.parks[i].worker != lw) continue;
        parks++;
        if (t.parks[i].unpark_ns >= t.parks[i].park_ns) ended++;
    }
    printf("loop worker: %zu parks, %zu with their unpark; park errors %zu\n", parks, ended, t.park_errors);
    CHECK(parks >= 1);       /* at least the one the pause fell in */
    CHECK_EQ_U64(ended, parks);
    CHECK_EQ_U64(t.park_errors, 0);
    /* the first wake's callback ran in the pause: only the second one is a poll */
    CHECK_EQ_U64(at_polls(&t, "on_wake", 0), 1);
    at_free(&t);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_mt_uv_pause_parked");
}
