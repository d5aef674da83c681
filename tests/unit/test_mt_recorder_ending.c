/* A start that finds the process already ending (its exit handlers run: sources.h) creates no
 * background thread, since the d9_stop that follows drains everything: no "dial9-collect"
 * thread while it records, a d9_flush meanwhile returns once d9_stop has written, and every
 * event recorded in between is in the trace. Nor does it start the kernel sources or the
 * memory-map source, or read the host's perf settings: the notes say so. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dial9/dial9.h"
#include "sources/sources.h"
#include "trace_files_util.h"
#include "unit/recorder_threads_util.h"
#include "unit/test_source_util.h"

#define POLLS 50

static atomic_bool flushed;

static void *flusher(void *arg) {
    (void)arg;
    d9_flush(); /* no thread drains: returns when d9_stop has */
    atomic_store(&flushed, true);
    return NULL;
}

int main(void) {
    char *dir = d9t_mkdtemp("ending");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedstat = false;

    d9_sources_process_ending();
    tt_threads before, own;
    tt_threads_before_start(&before);
    CHECK(d9_start(&cfg) == D9_OK);
    CHECK(tt_recorder_threads(&before, &own)); /* every thread it made has named itself */
    CHECK_EQ_U64(tt_threads_named(&own, "dial9-collect"), 0);

    d9_worker_begin("ending", 0);
    for (int i = 0; i < POLLS; i++) {
        d9_poll_begin(1, D9_HERE);
        d9_poll_end();
    }
    pthread_t th;
    CHECK(pthread_create(&th, NULL, flusher, NULL) == 0);
    d9_stop();
    pthread_join(th, NULL);
    CHECK(atomic_load(&flushed));

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    CHECK_EQ_U64(t.npolls, POLLS);
    CHECK_EQ_U64(t.lost, 0);
    static const char *const skipped[] = {"source.memory_map", "source.off_cpu", "source.switch_stacks"};
    for (size_t i = 0; i < sizeof skipped / sizeof *skipped; i++) {
        printf("%s = %s\n", skipped[i], tt_meta(&t, skipped[i]));
        CHECK(tt_starts_with(tt_meta(&t, skipped[i]), "inactive: " D9_SOURCES_ENDING_NOTE));
    }
    CHECK(tt_starts_with(tt_meta(&t, "host.perf_event_paranoid"), "not checked ("));
    CHECK(tt_starts_with(tt_meta(&t, "host.kptr_restrict"), "not checked ("));
    CHECK(tt_starts_with(tt_meta(&t, "host.frame_pointers"), "not checked ("));
    tt_free(&t);

    if (!d9t_failed) d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_mt_recorder_ending");
}
