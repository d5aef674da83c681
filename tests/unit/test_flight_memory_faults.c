/* Memory mode's segment buffers take huge pages (src/sinks/segment_buffer.c): recording 2 M
 * polls into memory took one minor page fault per 4 KiB of segment bytes (10 350 faults for
 * 40 MB, memory mode's whole extra cost over disk mode); with 2 MiB pages it takes a few.
 * Counted, not timed: the faults while the polls are recorded and drained must stay under a
 * quarter of the segment bytes' 4 KiB pages. Skipped where the kernel gives no huge pages
 * (transparent_hugepage "never"), or when it had none free this time (thp_fault_fallback). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

static long minor_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru); /* every thread: the collector writes the segments */
    return ru.ru_minflt;
}

/* A counter of /proc/vmstat, or -1. */
static long long vmstat(const char *name) {
    FILE *f = fopen("/proc/vmstat", "r");
    char key[128];
    long long v, found = -1;
    while (f && fscanf(f, "%127s %lld", key, &v) == 2)
        if (strcmp(key, name) == 0) found = v;
    if (f) fclose(f);
    return found;
}

int main(void) {
    char mode[128] = "";
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (thp) {
        if (!fgets(mode, sizeof mode, thp)) mode[0] = '\0';
        fclose(thp);
    }
    if (!thp || strstr(mode, "[never]")) {
        printf("test_flight_memory_faults: skipped: this kernel gives no transparent huge pages (%s)\n",
               thp ? "transparent_hugepage is never" : "no /sys/kernel/mm/transparent_hugepage");
        return 0;
    }
    char *base = d9t_mkdtemp("flight-faults");
    ft_env(base);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_FLIGHT_MEMORY_MB", "64", 1); /* 16 MiB segments, none evicted */
    d9_config cfg;
    CHECK(d9_config_from_env(&cfg) == D9_OK);
    CHECK(d9_start(&cfg) == D9_OK);
    d9_worker_begin("faults", 0);
    const d9_loc *where = D9_HERE;
    long long fallback0 = vmstat("thp_fault_fallback");
    long before = minor_faults();
    for (uint64_t i = 0; i < 2000000; i++) {
        if (i > 0 && i % 8192 == 0) d9_flush(); /* the thread buffer never fills: nothing dropped */
        d9_poll_begin((i & 63) + 1, where);
        d9_poll_end();
    }
    d9_flush();
    long faults = minor_faults() - before;
    long long fallback = vmstat("thp_fault_fallback") - fallback0;
    d9_stats st;
    d9_get_stats(&st);
    d9_worker_end();
    d9_stop();
    uint64_t pages = st.bytes_written / 4096;
    printf("test_flight_memory_faults: %" PRIu64 " segment bytes (%" PRIu64 " pages of 4 KiB), %ld minor faults\n",
           st.bytes_written, pages, faults);
    CHECK_EQ_U64(st.events_dropped, 0);
    CHECK(st.bytes_written > 32u << 20); /* at least two segments' worth */
    if ((uint64_t)faults >= pages / 4 && fallback > 0) {
        printf("test_flight_memory_faults: skipped: the kernel had no huge page free (thp_fault_fallback +%lld)\n",
               fallback);
    } else {
        CHECK((uint64_t)faults < pages / 4);
    }
    if (d9t_failed == 0) d9t_rm_rf(base);
    free(base);
    return d9t_summary("test_flight_memory_faults");
}
