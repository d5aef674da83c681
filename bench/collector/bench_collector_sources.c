/* d9_bench_collector_sources MODE N: the workload test_collector_source_instructions counts
 * under callgrind. A collector is driven by hand on this thread (as the recorder's background
 * thread drives it), which records N memcached-like requests as a worker (an unpark with its
 * ready wake, a poll's begin, its end with the park: five events), and a source hands over
 * what the perf source would for a worker that sleeps in its poller between requests:
 *   plain     nothing (the baseline)
 *   switches  a switch-out after each park and a switch-in before each unpark, on CPU 0 and 1
 *             by turns, handed over as the perf source does: each CPU's ring in time order
 * The difference of the modes' counts per record is what one context-switch record costs the
 * collector: its batch, the merge (a source event cuts the thread's run), its encoding. Prints
 * the events recorded, written and dropped (the test requires none dropped). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "core/collector.h"
#include "core/source.h"
#include "dial9/dial9.h"

#define REQUESTS_PER_DRAIN 256

typedef struct switches {
    d9_source base;
    d9_src_event pending[2][2 * REQUESTS_PER_DRAIN]; /* per CPU */
    size_t count[2];
} switches;

static void switches_collect(d9_source *src, d9_src_batch *out) {
    switches *s = src->ctx;
    for (int cpu = 0; cpu < 2; cpu++) {
        for (size_t i = 0; i < s->count[cpu]; i++)
            if (!d9_src_batch_add(out, &s->pending[cpu][i])) abort();
        s->count[cpu] = 0;
    }
}

static void switches_close(d9_source *src) { (void)src; }

static void note_switch(switches *s, int cpu, bool out, uint32_t tid, uint64_t ts) {
    d9_src_event *e = &s->pending[cpu][s->count[cpu]++];
    memset(e, 0, sizeof *e);
    e->ts_ns = ts;
    e->kind = D9_SRC_SWITCH;
    e->tid = tid;
    e->cpu = cpu;
    e->sw.out = out;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "plain") != 0 && strcmp(argv[1], "switches") != 0)) {
        fprintf(stderr, "usage: d9_bench_collector_sources plain|switches N\n");
        return 2;
    }
    bool with_switches = strcmp(argv[1], "switches") == 0;
    long n = atol(argv[2]);
    char dir[] = "/tmp/d9-collector-sources.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    d9_collector_config cc = {.cfg = &cfg, .run_id = "run1", .service = "collector-sources", .clock_name = "monotonic"};
    char err[512];
    d9_collector *col = d9_collector_open(&cc, err, sizeof err);
    if (!col) {
        fprintf(stderr, "d9_bench_collector_sources: %s\n", err);
        return 1;
    }
    static switches src = {.base = {.name = "switches", .collect = switches_collect, .close = switches_close}};
    src.base.ctx = &src;
    if (!d9_collector_add_source(col, &src.base) || d9_collector_start(col, err, sizeof err) != 0) {
        fprintf(stderr, "d9_bench_collector_sources: %s\n", err);
        return 1;
    }
    uint32_t tid = (uint32_t)gettid();
    d9__worker_begin("bench", 0);
    static d9_loc where = {"bench_collector_sources.c", "main", 1, 0};
    for (long i = 0; i < n; i++) {
        int cpu = (int)(i & 1);
        if (with_switches) note_switch(&src, cpu, false, tid, bench_now_ns()); /* before the unpark's clock read */
        d9__unpark_wake_ready(1);
        d9__poll_begin(1, &where);
        d9__poll_end_park();
        if (with_switches) note_switch(&src, cpu, true, tid, bench_now_ns());
        if ((i + 1) % REQUESTS_PER_DRAIN == 0) d9_collector_drain(col);
    }
    d9__worker_end();
    d9_stats st;
    d9_collector_close(col, &st);
    printf("requests %ld recorded %" PRIu64 " written %" PRIu64 " dropped %" PRIu64 "\n", n, st.events_recorded,
           st.events_written, st.events_dropped);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
