/* A sched_delay_ms rule's unpark wakes the collector (docs/flight-recorder.md, "The unpark's
 * wake-up"): memory mode, hour-long segments and DIAL9_FLUSH_MS at its most (60 s), so that no
 * periodic drain comes while the program runs. One scheduling delay is planted: the worker
 * parks, wakes a hog thread pinned to the worker's CPU and stays runnable (it spins on a flag)
 * until the hog has burnt 300 ms of its own CPU time there, then unparks. Every ns the hog ran
 * on that CPU the worker was runnable on it and not running, so schedstat's run-queue wait
 * between the park's reading and the unpark's is at least 300 ms, however the machine
 * schedules them (counted CPU time, not a sleep; priorities do not matter). With
 * sched_delay_ms>100, the dump must appear while the program records, matched in a drain the
 * unpark asked for (trigger.drain "woken"), and hold the unpark. The old collector slept its
 * 60 s, so nothing was matched before the wait below gave up; that wait (30 s) only bounds a
 * failure. Skips where the kernel has no schedstat. */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>

#include "check.h"
#include "core/flight_rule_wake.h"
#include "core/schedstat.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"
#include "test_source_util.h"

#define HOG_NS (300ull * 1000 * 1000)
#define SKIPPED 77

static sem_t g_go;
static _Atomic bool g_done;
static int g_cpu; /* the worker's and the hog's */

static void *hog(void *arg) {
    (void)arg;
    tt_pin_to_cpu(g_cpu);
    while (sem_wait(&g_go) != 0) {
    }
    uint64_t until = tt_thread_cpu_ns() + HOG_NS;
    while (tt_thread_cpu_ns() < until) TT_BURN_REGISTERS(1000);
    atomic_store(&g_done, true);
    return NULL;
}


static int record(void *arg) {
    const char *base = arg;
    if (!d9_schedstat_available()) return SKIPPED;
    ft_memory_rule_env(base, "sched_delay_ms>100");
    setenv("DIAL9_FLUSH_MS", "60000", 1);            /* no periodic drain during the test */
    setenv("DIAL9_SCHEDSTAT_RESOLUTION_US", "0", 1); /* the park and the unpark both read */
    if (!ft_start_from_env()) return 3;
    cpu_set_t set;
    g_cpu = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        while (g_cpu < CPU_SETSIZE - 1 && !CPU_ISSET(g_cpu, &set)) g_cpu++;
    tt_pin_to_cpu(g_cpu);
    sem_init(&g_go, 0, 0);
    pthread_t h;
    pthread_create(&h, NULL, hog, NULL);

    uint64_t wakes_before = d9_rule_wake_count();
    d9_worker_begin("sched-wake", 0);
    d9_poll_begin(1, D9_HERE);
    d9_poll_end();
    d9_park(); /* its schedstat reading: the delay's start */
    sem_post(&g_go);
    while (!atomic_load(&g_done)) TT_BURN_REGISTERS(100); /* runnable throughout */
    d9_unpark();
    d9_poll_begin(2, D9_HERE);
    d9_poll_end();
    pthread_join(h, NULL);

    return ft_rule_wake_end(base, wakes_before, "unpark", "the delayed unpark sent no wake");
}

static void on_event(const d9_event *ev, void *ctx) {
    uint64_t *delay = ctx;
    if (d9t_is(ev, "WorkerUnparkEvent")) {
        uint64_t d = d9t_field_u(ev, "sched_wait_ns");
        if (d > *delay) *delay = d;
    }
}

int main(void) {
    char *base = d9t_mkdtemp("flight-sched-wake");
    int rc = ft_run_child(record, base);
    if (rc == SKIPPED) {
        printf("SKIP: no /proc/thread-self/schedstat on this kernel (a scheduling delay cannot be measured)\n");
        d9t_rm_rf(base);
        free(base);
        return d9t_summary("test_mt_flight_sched_wake");
    }
    CHECK_EQ_U64(rc, 0);

    int dumps = 0;
    char dir[800];
    char *m = ft_first_dump(base, &dumps, dir, sizeof dir);
    CHECK_EQ_U64(dumps, 1);
    if (dumps >= 1) {
        CHECK(m != NULL);
        CHECK(m && strstr(m, "\"rule\": \"sched_delay_ms>100\"") != NULL);
        CHECK(m && strstr(m, "\"drain\": \"woken\"") != NULL); /* matched in the drain the unpark asked for */
        const char *matched = m ? strstr(m, "\"matched_after_ms\": ") : NULL;
        if (matched) printf("event -> matched by the collector: %.3f ms\n", strtod(matched + strlen("\"matched_after_ms\": "), NULL));
        if (d9t_failed && m) printf("%s\n", m);
        free(m);
        uint64_t delay = 0;
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, &delay), 0);
        printf("the planted delay: %.3f ms\n", delay / 1e6);
        CHECK(delay >= HOG_NS); /* the dump holds the unpark that fired */
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_sched_wake");
}
