/* Sustained rate: one thread emits poll pairs at a fixed rate (paced by busy-waiting on
 * clock_gettime, the way a busy event loop would produce them) for a fixed time, with the
 * default configuration. Afterwards, from d9_get_stats: were all events kept?
 *
 * When the emitter falls behind (descheduled by the kernel), it catches up for at most
 * MAX_CATCH_UP_NS worth of events, then shifts its schedule: an event loop that lost the CPU
 * for a second does not then run a second's worth of polls at memory speed, and such a burst
 * would test the ring's size, not the sustained rate. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

#define MAX_CATCH_UP_NS 1000000

typedef struct paced_run {
    double rate, secs;
    uint64_t emitted;
    uint64_t max_lag_ns;      /* furthest behind schedule (descheduled, or too slow) */
    uint64_t shifts, shifted_ns; /* schedule moved on after falling too far behind */
    uint64_t wall_ns, cpu_ns; /* of the emitting thread */
} paced_run;

static uint64_t cpu_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *emitter_main(void *arg) {
    paced_run *p = arg;
    const d9_loc *where = D9_HERE;
    d9_worker_begin("bench", 0);
    uint64_t pairs = (uint64_t)(p->rate * p->secs / 2);
    double ns_per_pair = 2e9 / p->rate;
    uint64_t cpu0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t start = bench_now_ns(), now = start;
    for (uint64_t i = 0; i < pairs; i++) {
        uint64_t due = start + p->shifted_ns + (uint64_t)((double)i * ns_per_pair);
        while ((now = bench_now_ns()) < due) __asm__ volatile("pause");
        if (now - due > p->max_lag_ns) p->max_lag_ns = now - due;
        if (now - due > MAX_CATCH_UP_NS) {
            p->shifts++;
            p->shifted_ns += now - due;
        }
        d9_poll_begin((i & 1023) + 1, where);
        d9_poll_end();
    }
    p->wall_ns = bench_now_ns() - start;
    p->cpu_ns = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    p->emitted = 2 * pairs;
    d9_worker_end();
    return NULL;
}

void bench_sustained(const bench_opts *o) {
    printf("\nSustained rate: %.0f events/s (poll pairs) on one thread for %.0f s, default config\n",
           o->sustained_rate, o->sustained_secs);
    char *dir = bench_make_dir(o->scratch, "sustained");
    if (!dir || bench_start(dir, BENCH_SCHEDSTAT_DEFAULT) != 0) exit(1);
    paced_run p = {.rate = o->sustained_rate, .secs = o->sustained_secs};
    uint64_t proc0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    pthread_t tid;
    pthread_create(&tid, NULL, emitter_main, &p);
    pthread_join(tid, NULL);
    uint64_t proc_ns = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - proc0;
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    uint64_t files = bench_tree_bytes(dir);
    bench_remove_tree(dir);
    free(dir);

    double achieved = (double)p.emitted / ((double)(p.wall_ns - p.shifted_ns) / 1e9);
    /* The main thread sleeps in pthread_join: what the process used beyond the emitter is the
     * recorder's background threads (draining, encoding, writing, post-processing segments). */
    double bg = (double)(proc_ns > p.cpu_ns ? proc_ns - p.cpu_ns : 0) / (double)p.wall_ns;
    printf("  emitted      %" PRIu64 " events in %.2f s = %.0f events/s while running (furthest"
           " behind schedule: %.2f ms)\n", p.emitted, p.wall_ns / 1e9, achieved, p.max_lag_ns / 1e6);
    if (p.shifts)
        printf("  descheduled  %" PRIu64 " time(s) for more than %.0f ms: schedule shifted by %.1f ms"
               " in all\n", p.shifts, MAX_CATCH_UP_NS / 1e6, p.shifted_ns / 1e6);
    printf("  recorder     %" PRIu64 " recorded, %" PRIu64 " dropped, %" PRIu64 " written;"
           " %" PRIu64 " bytes in %" PRIu64 " segment(s) (%" PRIu64 " B on disk), %" PRIu64
           " write errors\n", st.events_recorded, st.events_dropped, st.events_written,
           st.bytes_written, st.segments_sealed, files, st.write_errors);
    printf("  background   %.1f%% of one CPU in the recorder's threads (%.0f ns per event)\n",
           100.0 * bg, bg * (double)p.wall_ns / (double)(p.emitted ? p.emitted : 1));
    bool kept = st.events_dropped == 0 && st.events_recorded >= p.emitted;
    bool on_rate = achieved >= 0.98 * o->sustained_rate;
    printf("  target       zero drops at %.0f events/s: %s%s\n", o->sustained_rate,
           kept ? "ok (no event dropped)" : "MISSED (events were dropped)",
           on_rate ? "" : "; note: the emitter could not keep the rate");
}
