/* d9_bench: how much the dial9 recorder costs. Prints a report; never fails on a number.
 *
 *   d9_bench                  full run (about 15 s)
 *   d9_bench --short          CI run, under 10 s: fewer batches, 1 s sustained
 *   d9_bench --instructions N record N poll pairs and exit (bench/callgrind.sh counts
 *                             instructions per event from two such runs)
 *   d9_bench --only SECTION   disabled | hooks | bytes | sustained | units
 *   d9_bench --dir D          where the scratch trace directories go (default $TMPDIR or /tmp)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void usage(FILE *to) {
    fprintf(to, "usage: d9_bench [--short] [--only disabled|hooks|bytes|sustained|units] [--dir D]\n"
                "       d9_bench --instructions N   (for bench/callgrind.sh)\n");
}

static bool wants(const char *only, const char *section) {
    return !only || strcmp(only, section) == 0;
}

static void footer(void) {
    char load[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fgets(load, sizeof load, f)) load[strcspn(load, "\n")] = 0;
        fclose(f);
    }
    printf("\nload average at the end: %s\n", load);
}

int main(int argc, char **argv) {
    bench_opts o = {.batches = 100, .batch_events = 16384, .sustained_secs = 10,
                    .sustained_rate = 2e6};
    const char *only = NULL, *base = getenv("TMPDIR");
    uint64_t instructions = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--short") == 0) {
            o.short_mode = true;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            base = argv[++i];
        } else if (strcmp(argv[i], "--instructions") == 0 && i + 1 < argc) {
            instructions = strtoull(argv[++i], NULL, 10);
            if (instructions == 0) {
                usage(stderr);
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (o.short_mode) {
        o.batches = 20;
        o.sustained_secs = 1;
    }
    char *scratch = bench_make_dir(base && *base ? base : "/tmp", "d9bench");
    if (!scratch) return 1;
    o.scratch = scratch;

    int rc = 0;
    if (instructions) {
        rc = bench_instructions(&o, instructions);
    } else {
        bench_machine_header(&o);
        /* First: "before d9_start" must run before anything starts the recorder. */
        if (wants(only, "disabled")) {
            bench_disabled_before_start(&o);
            bench_disabled_paused(&o);
        }
        if (wants(only, "hooks")) bench_hook_costs(&o);
        if (wants(only, "bytes")) bench_bytes_per_event(&o);
        if (wants(only, "sustained")) bench_sustained(&o);
        if (wants(only, "units")) bench_unit_costs(&o);
        footer();
    }
    bench_remove_tree(scratch);
    free(scratch);
    return rc;
}
