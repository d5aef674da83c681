/* DIAL9_SCHEDSTAT_RESOLUTION_US: a park or unpark reads schedstat only when the resolution has
 * passed since the thread's previous read; with DIAL9_THREAD_CPU_TIME=every the CPU time is
 * read at every one whatever the resolution (dial9 requires cpu_time_ns): each park/unpark's is
 * fresh, grown by the spinning in between. With a resolution longer than the run only the first reads schedstat, and no
 * scheduling delay is invented: every unpark's sched_wait_ns (required by dial9) is 0. */
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Burn `ns` of CPU, then sleep briefly: the kernel updates schedstat's CPU time at context
 * switches (and ticks), so the sleep makes the next read see the CPU just burnt. */
static void spin_cpu(uint64_t ns) {
    uint64_t end = thread_cpu_ns() + ns;
    while (thread_cpu_ns() < end) {
    }
    struct timespec nap = {0, 10 * 1000};
    nanosleep(&nap, NULL);
}

typedef struct seen {
    int parks;          /* park + unpark events */
    int with_cpu;       /* ... with a nonzero cpu_time_ns */
    int distinct_cpu;   /* ... whose CPU time is above the previous one */
    int unparks_waited; /* unparks with a sched_wait_ns (present: dial9 requires it) */
    uint64_t last_cpu;
    uint64_t wait_total;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (!d9t_is(ev, "WorkerParkEvent") && !d9t_is(ev, "WorkerUnparkEvent")) return;
    const d9_value *c = d9_event_field(ev, "cpu_time_ns"), *w = d9_event_field(ev, "sched_wait_ns");
    s->parks++;
    if (c && c->present && c->u != 0) {
        s->with_cpu++;
        if (c->u > s->last_cpu) s->distinct_cpu++;
        s->last_cpu = c->u;
    }
    if (d9t_is(ev, "WorkerUnparkEvent") && w && w->present) {
        s->unparks_waited++;
        s->wait_total += w->u;
    }
}

/* `pairs` park/unpark pairs with `spin_ns` of CPU after each call; returns what was seen. */
static seen record(uint32_t resolution_us, int pairs, uint64_t spin_ns) {
    char *dir = d9t_mkdtemp("schedres");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.schedstat_resolution_us = resolution_us;
    cfg.thread_cpu_time = D9_THREAD_CPU_TIME_EVERY; /* park's default: test_recorder_thread_cpu_time */
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin("schedres", 0);
    for (int i = 0; i < pairs; i++) {
        d9_park();
        spin_cpu(spin_ns);
        d9_unpark();
        spin_cpu(spin_ns);
    }
    d9_worker_end();
    d9_stop();
    seen s = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    d9t_rm_rf(dir);
    free(dir);
    return s;
}

int main(void) {
    /* every call reads: each value is fresh, 50 us of CPU apart */
    seen every = record(0, 50, 50 * 1000);
    CHECK_EQ_U64(every.parks, 100);
    CHECK_EQ_U64(every.with_cpu, 100);
    CHECK_EQ_U64(every.unparks_waited, 50);
    CHECK(every.distinct_cpu >= 99);

    /* 1 s resolution over ~5 ms: only the first reads schedstat; the CPU time is still fresh
     * at every call, and the 49 unparks not read carry a 0 wait */
    seen coarse = record(1000 * 1000, 50, 50 * 1000);
    CHECK_EQ_U64(coarse.parks, 100);
    CHECK_EQ_U64(coarse.with_cpu, 100);
    CHECK(coarse.distinct_cpu >= 99);
    CHECK_EQ_U64(coarse.unparks_waited, 50);
    CHECK_EQ_U64(coarse.wait_total, 0);

    /* 100 us with 200 us between calls: every call is past the resolution */
    seen spaced = record(100, 25, 200 * 1000);
    CHECK_EQ_U64(spaced.with_cpu, 50);
    CHECK(spaced.distinct_cpu >= 49);
    printf("fresh CPU times: every %d/100, 1 s %d/100, 100 us spaced %d/50\n", every.distinct_cpu,
           coarse.distinct_cpu, spaced.distinct_cpu);
    return d9t_summary("test_recorder_schedstat_resolution");
}
