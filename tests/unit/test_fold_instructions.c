/* dial9 fold's cost per event, counted: callgrind's instructions inside d9f_fold (every
 * segment decoded, its rows put, the Parquet files encoded, compressed and written) for a
 * generated segment, against a bound written here. Counts do not move with the machine's load,
 * so a regression of fold's per-event work fails anywhere.
 *
 * The segment is the same every run (fold_mix_trace.h): 4 workers, 20 spawn locations, per round a wake and a
 * poll, every 2nd round a park and unpark around a switch-out and in, every 4th a task spawned
 * and one terminated, every 64th a CPU sample and an off-CPU sample (about the mix of a
 * recorded executor run). Two segments of R1 and R2 rounds, and the difference of their counts
 * over the difference of their events is one event: what is paid once per fold (the output's
 * directories, the footers, the first row group's setup) cancels.
 *
 * Skips without valgrind, without the dial9 binary, and in a sanitizer build (valgrind refuses
 * its instrumentation, which is not the cost measured). Labelled nosan in CMakeLists.txt. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "callgrind_total.h"

#include "fold_mix_trace.h"

/* Measured (gcc 12, RelWithDebInfo, this 2-vCPU kvm guest) on this segment: 1 661.6
 * instructions per event before the per-worker interval cursor, the worker table and the
 * inline varints, 1 567.1 after them, 1 494.2 with the switch records paired as they come (the
 * executor's recorded segment: 1 820 -> 1 728 -> 1 688). The count takes in libc's and
 * libzstd's, whose code both pick by the CPU's features (memcpy's variant, zstd's BMI2 paths),
 * and ~7 % of room is left for that and another compiler's choices; not for the search per
 * poll and the sort of the switch records both (it fails on the code before: 1 661.6).
 * Then the rows column at a time (polls, sched, wakes, samples and poll_hist in batches of
 * columns, no put call per value) and DELTA blocks written in place: 1 512.0 -> 1 119.5 (the
 * executor's recorded runs: docs/fleet-tables.md, "Measured"). Then the decoder's field
 * plans, bounded events read straight through (format/decoder.c, read_bounded): 1 120.9 ->
 * 1 035.1. The bound leaves ~6 %, and fails on the decoder before (1 120.9). Then (measured
 * 1 081.2 at that point) the writer's batch min/max in locals and nullable values packed at
 * once, 1 044.2, the events read by runs (d9_dec_next_run), 1 006.8, the fold's pairing
 * state, batch rows and spawn locations' fast paths inline, 968.9, a dictionary column's
 * indexes reserved per batch, 962.7: the bound leaves ~4 %, and fails on the code before
 * (1 081.2). Then the off-CPU intervals partitioned by worker instead of sorted, 932.0, a
 * thread's last switch record by a cache before the map, 924.0, a run's stream entered once,
 * poll_hist's groups cached and the segment's times as a min and a max, 912.8, a present
 * Varint's type and presence tested in one compare, 909.8, a poll's parts copied unrolled,
 * 902.6, a schema's run bound checked once, 894.7, a row's hour by two compares, 891.1, and
 * an event timed by its ts_ns alone, 889.1: the bound leaves ~4 %, and fails on the code
 * before (962.9). Then (898.8 with the sorted dictionaries merged) the column buffers grown by
 * mremap past 64 KiB instead of copied by realloc, 856.1, times and durations at zstd level 1
 * with 5-byte matches, 861.3, sched's rows by worker, 862.4, a fixed-width dictionary probed
 * by its values' bits, 854.5, the DELTA packing inlined per width, 838.4, PLAIN pages
 * compressed from the column's buffer, 825.5, polls' times and durations back at level 3,
 * 821.6: the bound leaves ~6 %, and fails on the code before (898.8). Then zstd per column
 * (parquet/pq_zstd.h: times' deltas, durations' indexes and the attribution parts entropy
 * coded without zstd's match search, the runs of zeros handed to it as matches), 766.2 (the
 * zero scan a word pair at a time, 763.0), a constant integer chunk as a one-entry
 * dictionary, 751.7, polls' wall_time and duration_ns back at the level (their bytes a poll),
 * 771.4, integer dictionary pages at level 1 with 5-byte matches, 771.7: the bound leaves
 * ~5.6 %, and fails on the code before (821.6). Then (746.1 with the decoder's runs) a
 * fixed-width column's dictionary built at the row group's end instead of a hash probe per
 * put (parquet/dict_order.c), 711.6, INT64 batches copied with their min and max four at a
 * time (parquet/copy_minmax.c), 673.1, a DELTA block's deltas and smallest in one loop, 667.3,
 * the radix sort on words of key and row, 667.7, a wide range of few values through a hash
 * table, 665.2, the RLE run test and the sort's digit by cost, 664.3: the bound leaves ~5 %,
 * and fails on the code before (746.1). Then (issue 35, the fold's own work) the marks each
 * by its kind into a per-worker slot, no mark struct built and copied, 628.8, a constant
 * identity column filled by doubling copies and an optional column's levels 8 rows a step,
 * 612.2, sched rows placed in their worker's stripe as they come (no permutation at the
 * flush), 605.2, a run's times in one loop and poll_hist's group found within its hour's
 * walls (no division per poll), 594.3, a string-id batch's index room reserved once, 591.6,
 * the common events' handlers inline in the run's loop, 581.3: the bound leaves ~5 %, and
 * fails on the code before (664.3). Then (issue 35, the decoder and the fold's own pass) the
 * handlers' fields read as typed values (d9_dec_binding.uint_fields: no index and type test
 * per value) and a spawn location's cache hit inline, 562.2, the coverage's cursor by its
 * quiet times, 561.7 (this segment has no coverage records: the recorded runs, with a
 * governor's pause, went 724 -> 675), a poll's end inline, 557.4, the decoder's varints of
 * three to five bytes step by step, 553.9. Then (issue 35, zstd per column) exact DELTA
 * widths and polls' wall_time entropy coded; then a DELTA chunk that says ENTROPY or NONE
 * probed: this segment's times step by an arithmetic progression, which zstd's match search
 * codes in an eighth of the entropy coding's bytes, so its times go at the level (its tables
 * 227.6 -> 163.4 kB, where entropy coding alone made 290.9 kB; recorded times stay entropy
 * coded: two 5 s executor runs 543.8 M -> 505.3 M instructions), 564.6 with both: the bound
 * leaves ~2.4 % (counts repeat exactly on one toolchain), and fails on the code before the
 * two (581.3). Then (issue 35, foldfast) the DELTA probe sampling the whole chunk, 564.2, and
 * the RLE hybrid's runs compared 32 bytes a step and its groups of 8 packed whole, 549.1, the
 * packing's width tested once a run of groups, 544.5, a DELTA miniblock's width from its
 * largest delta (no OR pass), 539.7: the bound leaves ~2.8 %, and fails on the code before
 * (564.2; main 564.6). */
#define BOUND_PER_EVENT 555.0

#define R1 4000
#define R2 24000

/* callgrind's total inside d9f_fold for `dial9 fold seg --to out`; -1 on failure */
static long long count(const char *dial9, const char *dir, const char *seg, const char *tag) {
    char out[1024], command[6144];
    snprintf(out, sizeof out, "%s/cg.%s", dir, tag);
    if (snprintf(command, sizeof command, "'%s' fold -q '%s' --to '%s/out.%s'", dial9, seg, dir, tag) >=
        (int)sizeof command)
        return -1;
    return d9t_callgrind_total(out, "--toggle-collect=d9f_fold", command);
}

int main(void) {
#ifdef D9T_SANITIZED
    printf("SKIP: a sanitizer build (valgrind refuses it; the count is of the plain build)\n");
    return 0;
#endif
    const char *build = getenv("D9_BUILD_DIR");
    char dial9[2048];
    snprintf(dial9, sizeof dial9, "%s/dial9", build ? build : ".");
    if (access(dial9, X_OK) != 0) {
        printf("SKIP: %s is not built\n", dial9);
        return 0;
    }
    if (d9t_run("command -v valgrind >/dev/null 2>&1") != 0) {
        printf("SKIP: valgrind is not installed (apt-get install valgrind)\n");
        return 0;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/fold-instructions.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char seg1[1100], seg2[1100];
    snprintf(seg1, sizeof seg1, "%s/small.bin", dir);
    snprintf(seg2, sizeof seg2, "%s/large.bin", dir);
    uint64_t e1, e2;
    int failed = 0;
    if (d9t_fold_mix_write(seg1, R1, &e1) != 0 || d9t_fold_mix_write(seg2, R2, &e2) != 0) {
        fprintf(stderr, "FAIL: writing the segments\n");
        failed = 1;
    }
    long long a = failed ? -1 : count(dial9, dir, seg1, "small");
    long long b = failed ? -1 : count(dial9, dir, seg2, "large");
    if (!failed && (a <= 0 || b <= a)) {
        fprintf(stderr, "FAIL: no instructions counted in d9f_fold (%lld, %lld)\n", a, b);
        failed = 1;
    }
    if (!failed) {
        double per_event = (double)(b - a) / (double)(e2 - e1);
        if (per_event <= BOUND_PER_EVENT) {
            printf("ok    dial9 fold: %.1f instructions per event (bound %.0f; %" PRIu64 " and %" PRIu64
                   " events: %lld and %lld)\n",
                   per_event, BOUND_PER_EVENT, e1, e2, a, b);
        } else {
            printf("FAIL  dial9 fold: %.1f instructions per event > %.0f (%" PRIu64 " and %" PRIu64
                   " events: %lld and %lld)\n",
                   per_event, BOUND_PER_EVENT, e1, e2, a, b);
            char cmd[2048];
            snprintf(cmd, sizeof cmd,
                     "callgrind_annotate --inclusive=no '%s/cg.large' 2>/dev/null | sed -n '/file:function/,$p' | head -16",
                     dir);
            (void)d9t_run(cmd);
            failed = 1;
        }
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (getenv("D9_KEEP_FOLD_PROFILE")) /* to read the profiles: callgrind_annotate DIR/cg.large */
        printf("kept %s (segments, folds and callgrind profiles)\n", dir);
    else
        (void)d9t_run(cmd);
    if (!failed) printf("PASS\n");
    return failed;
}
