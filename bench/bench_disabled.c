/* Hook cost while not recording: before any d9_start, and while paused with
 * d9_set_enabled(false). The inline hooks test one global flag, so the loop below is a load
 * and a branch per event; its own overhead (counter, compare) is included: an upper bound. */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

static double poll_pairs_ns(uint32_t pairs, const d9_loc *where) {
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < pairs; i++) {
        d9_poll_begin(i + 1, where);
        d9_poll_end();
    }
    return (double)(bench_now_ns() - t0) / (2.0 * pairs);
}

/* d9_set_local_queue is not behind the flag: it is a call into the library every time. */
static double set_local_queue_ns(uint32_t calls) {
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < calls; i++) d9_set_local_queue(i & 7);
    return (double)(bench_now_ns() - t0) / calls;
}

static bench_dist repeat(const bench_opts *o, bool local_queue) {
    uint32_t batches = o->short_mode ? 5 : 15;
    uint32_t n = o->short_mode ? 2000000 : 10000000;
    double *s = calloc(batches, sizeof *s);
    if (!s) exit(1);
    const d9_loc *where = D9_HERE;
    for (uint32_t b = 0; b < batches; b++)
        s[b] = local_queue ? set_local_queue_ns(n) : poll_pairs_ns(n, where);
    bench_dist d = bench_dist_of(s, batches);
    free(s);
    return d;
}

static void row(const char *label, bench_dist d, bool has_target) {
    char target[48] = "(informational)";
    if (has_target)
        snprintf(target, sizeof target, "<= %.0f ns: %s", TARGET_NS_DISABLED,
                 bench_verdict(d.median, TARGET_NS_DISABLED));
    printf("  %-42s %8.2f %8.2f %8.2f   %s\n", label, d.median, d.p10, d.p90, target);
}

void bench_disabled_before_start(const bench_opts *o) {
    printf("\nHook cost while not recording (ns per event, loop overhead included)\n");
    printf("  %-42s %8s %8s %8s   %s\n", "case", "median", "p10", "p90", "target");
    row("poll begin+end, before d9_start", repeat(o, false), true);
}

void bench_disabled_paused(const bench_opts *o) {
    char *dir = bench_make_dir(o->scratch, "paused");
    if (!dir || bench_start(dir, BENCH_SCHEDSTAT_DEFAULT) != 0) exit(1);
    d9_set_enabled(false);
    row("poll begin+end, after d9_set_enabled(false)", repeat(o, false), true);
    row("d9_set_local_queue (not behind the flag)", repeat(o, true), false);
    d9_set_enabled(true);
    d9_stop();
    bench_remove_tree(dir);
    free(dir);
}
