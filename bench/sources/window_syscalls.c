/* The workload whose system calls stacks_after_drop.sh counts per window (strace -f -c of two
 * runs, 10 and 40 closes, the difference over 30): the governor held at 1 in 4 with closing
 * forced, two threads ping-ponging (one a worker), as test_mt_source_governor_close.
 *   window_syscalls keep|drop CLOSES TRACE_DIR
 * keep: root all along; drop: setuid 65534 while the events are open (held at full, enabled),
 * then the windows. Runs until CLOSES more closes after that point. Built
 * with the benchmarks (bench/sources/CMakeLists.txt; it uses perf_events.h's test hooks). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dial9/dial9.h"
#include "sources/cost_governor.h"
#include "sources/perf_events.h"
#include "unit/pingpong_workload.h" /* the governor tests' ping-pong */

static void nap(void) {
    struct timespec t = {0, 5000000};
    nanosleep(&t, NULL);
}
static uint64_t closes(void) {
    uint64_t c, r, s;
    d9_perf_switch_events_now(&c, &r, &s);
    return c;
}

int main(int argc, char **argv) {
    bool drop = argc > 1 && strcmp(argv[1], "drop") == 0;
    uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 20;
    if (pipe(g_ping) || pipe(g_pong)) return 1;
    d9_perf_hold_governor_level(D9_GOV_LEVEL_SAMPLED_FIRST + 1);
    d9_perf_set_window_closing(D9_PERF_CLOSE_ALWAYS);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argc > 3 ? argv[3] : "traces";
    cfg.symbolize = false;
    if (d9_start(&cfg) != 0) return 2;
    pthread_t a, b;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    while (closes() < 2) nap();
    if (drop) {
        d9_perf_hold_governor_level(D9_GOV_LEVEL_FULL);
        for (;;) {
            int level; uint64_t ch, seq;
            d9_perf_governor_now(&level, &ch);
            if (level == D9_GOV_LEVEL_FULL && d9_perf_switch_state(&seq) == D9_PERF_SWITCH_ENABLED && !(seq & 1)) break;
            nap();
        }
        d9_flush();
        if (d9_hand_over_files(65534, 65534) || setgid(65534) || setuid(65534)) return 3;
        d9_perf_hold_governor_level(D9_GOV_LEVEL_SAMPLED_FIRST + 1);
    }
    uint64_t c0 = closes();
    while (closes() < c0 + n) nap();
    uint64_t st, cs; d9_perf_samples_read(&st, &cs);
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    uint64_t c, r, s; d9_perf_switch_events_now(&c, &r, &s);
    d9_stop();
    fprintf(stderr, "%s: closes %llu reopens %llu stacks read %llu\n", drop ? "drop" : "keep", (unsigned long long)c, (unsigned long long)r, (unsigned long long)st);
    return 0;
}
