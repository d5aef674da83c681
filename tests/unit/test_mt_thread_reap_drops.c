/* An exited thread is freed only once the collector has reported its drops, not merely once
 * its ring is drained. A thread that registers while a drain runs (after its snapshot), drops
 * every event (no ring memory left in the budget) and exits before that drain's end has an
 * empty ring: the drain's reap used to free it, and its drops were in no report and no count
 * (test_mt_recorder_memory_budget under ThreadSanitizer, 2 threads of 1 000, one run in a
 * fresh clone's make test). Played here without a recorder, step by step: the collector's
 * part is the test's, so nothing depends on timing. */
#include <pthread.h>

#include "check.h"
#include "core/thread_buffer.h"

static size_t registered(void) {
    size_t n = 0;
    d9_thread **all = d9_threads_snapshot(&n);
    free(all);
    return n;
}

/* What the thread saw, checked by main after the join (the CHECK counters are not atomic). */
static bool g_had_buffer, g_had_ring;
static int g_refused;

static void *drop_and_exit(void *arg) {
    (void)arg;
    d9_thread *t = d9_thread_current();
    g_had_buffer = t != NULL;
    if (!t) return NULL;
    g_had_ring = t->ring != NULL;
    for (int i = 0; i < 10; i++) g_refused += !d9_thread_make_room(t, 2);
    return NULL;
}

int main(void) {
    d9_thread_set_ring_limits(512, 0); /* a budget of 0 bytes: every thread's events drop */
    d9_threads_set_collector_running(true);
    size_t before = registered();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, drop_and_exit, NULL) == 0);
    pthread_join(th, NULL);
    CHECK(g_had_buffer);
    CHECK(!g_had_ring); /* no budget: a ring that holds nothing */
    CHECK_EQ_U64(g_refused, 10);
    CHECK_EQ_U64(registered(), before + 1);

    size_t n = 0;
    d9_thread **all = d9_threads_snapshot(&n);
    d9_thread *t = NULL;
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&all[i]->exited)) t = all[i];
    free(all);
    CHECK(t != NULL);
    if (!t) return d9t_summary("thread_reap_drops");
    CHECK_EQ_U64(atomic_load(&t->drops_total), 10);

    /* A drain that did not see it (its snapshot predates it) ends: the thread stays. */
    d9_threads_reap();
    CHECK_EQ_U64(registered(), before + 1);
    /* The next drain reports its drops (d9_col_report_ring_drops): now it goes. */
    t->c_drops_reported = atomic_load(&t->drops_total);
    d9_threads_reap();
    CHECK_EQ_U64(registered(), before);
    d9_threads_set_collector_running(false);
    return d9t_summary("thread_reap_drops");
}
