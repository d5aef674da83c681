/* Lifecycle under fire: threads keep calling hooks (and come and go) while the main thread
 * starts, stops, pauses and flushes the recorder over and over. Nothing may crash or race
 * (this test runs under TSan too), and every file of every run must decode cleanly. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

static atomic_int g_stop;
static atomic_uint_least64_t g_emitted;

static void *hammer(void *arg) {
    uint32_t idx = (uint32_t)(uintptr_t)arg;
    while (!atomic_load(&g_stop)) {
        d9_worker_begin("restart", idx);
        for (uint64_t i = 0; i < 2000; i++) {
            d9_poll_begin(i, D9_HERE);
            d9_wake(i + 1);
            d9_poll_end();
        }
        d9_park();
        d9_unpark();
        d9_worker_end();
        atomic_fetch_add(&g_emitted, 6002);
    }
    return NULL;
}

/* Short-lived threads: their buffers are freed while the collector may be reading. */
static void *ephemeral(void *arg) {
    (void)arg;
    for (int i = 0; i < 100; i++) {
        d9_poll_begin(1, D9_HERE);
        d9_poll_end();
    }
    return NULL;
}

static void *spawner(void *arg) {
    (void)arg;
    while (!atomic_load(&g_stop)) {
        pthread_t t;
        if (pthread_create(&t, NULL, ephemeral, NULL) == 0) pthread_join(t, NULL);
    }
    return NULL;
}

static uint64_t g_decoded;
static void count(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (d9t_is(ev, "PollStartEvent")) g_decoded++;
}

int main(void) {
    char *dir = d9t_mkdtemp("restart");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 2;
    cfg.buffer_kb = 64;

    pthread_t th[3];
    for (uintptr_t i = 0; i < 2; i++) pthread_create(&th[i], NULL, hammer, (void *)i);
    pthread_create(&th[2], NULL, spawner, NULL);

    int runs = 0, bad = 0;
    for (int round = 0; round < 12; round++) {
        CHECK(d9_start(&cfg) == 0);
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
        if (round % 3 == 0) d9_flush();
        if (round % 4 == 1) {
            d9_set_enabled(false);
            nanosleep(&nap, NULL);
            d9_set_enabled(true);
        }
        nanosleep(&nap, NULL);
        d9_stop();
        runs++;
        bad += d9t_decode_run(d9_run_dir(), count, NULL);
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);

    printf("%d runs, %" PRIu64 " polls decoded of %" PRIu64 " hook calls\n", runs, g_decoded,
           atomic_load(&g_emitted) / 3);
    CHECK_EQ_U64(bad, 0);
    CHECK(g_decoded > 0);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_restart");
}
