/* The fused hooks' fast paths (d9__poll_end_park, d9__unpark_wake_ready_poll_begin: core/hooks.c)
 * take schedstat's decision from what the thread kept at its last slow path (core/schedstat.h,
 * d9_schedstat_keep) instead of the globals: they must read exactly when the general path does.
 * Counted by the reads themselves (d9_schedstat_reads), not timed:
 * - resolution 0: every park and unpark reads (the due time kept is the last read's own);
 * - resolution 1 s: a recording's first fused call reads (each recording begins with a poll,
 *   whose begin sets the thread's page up under it, so that call is the fast path's to decide),
 *   then one more per second the run lasted at most; a second recording reads again at its
 *   first, though the due time the thread kept in the first is still ahead (the recording's run
 *   is kept beside it);
 * - schedstat off: nothing reads, then on again in the next recording: it reads.
 * CLOCK_MONOTONIC, so that the resolution is in the hook's units from the start. */
#include <time.h>

#include "check.h"
#include "core/schedstat.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"

#define REQUESTS 300
#define SECOND_NS 1000000000ull

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SECOND_NS + (uint64_t)ts.tv_nsec;
}

typedef struct counted {
    uint64_t reads;      /* schedstat reads during the recording's requests */
    uint64_t elapsed_ns; /* how long they took */
} counted;

/* A loop thread's requests as the adapters record them: the unpark, its wake and the callback's
 * poll begin in one call, the poll's end and the park in another. */
static counted record(const char *dir, uint32_t resolution_us, bool schedstat) {
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.clock = D9_CLOCK_MONOTONIC;
    cfg.schedstat = schedstat;
    cfg.schedstat_resolution_us = resolution_us;
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin("fused_schedstat", 0);
    const d9_loc *where = D9_HERE;
    uint64_t before = __atomic_load_n(&d9_schedstat_reads, __ATOMIC_RELAXED), start = mono_ns();
    /* a poll first (no park, which reads on the general path): its begin sets the thread's page
     * up under this recording (poll_cpu.h), so that the first fused call below finds it current
     * and decides schedstat on its fast path */
    struct timespec nap = {0, 1000 * 1000}; /* switched out: the page's lock moves, the begin reads */
    nanosleep(&nap, NULL);
    d9_poll_begin(1, where);
    d9_poll_end();
    for (uint64_t i = 0; i < REQUESTS; i++) {
        d9__unpark_wake_ready_poll_begin(i + 1, i + 1, where);
        d9__poll_end_park();
    }
    counted c = {__atomic_load_n(&d9_schedstat_reads, __ATOMIC_RELAXED) - before, mono_ns() - start};
    d9_unpark();
    d9_worker_end();
    d9_stop();
    return c;
}

int main(void) {
    if (!d9_schedstat_available()) {
        printf("SKIP: no /proc/self/schedstat on this kernel\n");
        return 0;
    }
    char *dir = d9t_mkdtemp("fusedsched");

    counted every = record(dir, 0, true);
    printf("resolution 0: %llu reads for %d fused calls\n", (unsigned long long)every.reads, 2 * REQUESTS);
    CHECK_EQ_U64(every.reads, 2 * (uint64_t)REQUESTS);

    for (int run = 0; run < 2; run++) {
        counted once = record(dir, 1000000, true);
        uint64_t most = 1 + once.elapsed_ns / SECOND_NS; /* the first, then one a second */
        printf("resolution 1 s, recording %d: %llu reads in %.3f s\n", run + 1, (unsigned long long)once.reads,
               (double)once.elapsed_ns / 1e9);
        CHECK(once.reads >= 1); /* the recording's first: a due time kept in the last one is no excuse */
        CHECK(once.reads <= most);
    }

    counted off = record(dir, 0, false);
    printf("schedstat off: %llu reads\n", (unsigned long long)off.reads);
    CHECK_EQ_U64(off.reads, 0);
    counted again = record(dir, 1000000, true);
    CHECK(again.reads >= 1);

    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_recorder_fused_schedstat");
}
