/* Helpers: distributions, scratch directories, starting the recorder, the machine header. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "core/clock.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double nearest_rank(const double *sorted, size_t n, double q) {
    return sorted[(size_t)(q * (double)(n - 1) + 0.5)];
}

bench_dist bench_dist_of(double *samples, size_t n) {
    if (n == 0) return (bench_dist){0, 0, 0};
    qsort(samples, n, sizeof *samples, cmp_double);
    return (bench_dist){nearest_rank(samples, n, 0.10), nearest_rank(samples, n, 0.50),
                        nearest_rank(samples, n, 0.90)};
}

char *bench_make_dir(const char *parent, const char *name) {
    char *path;
    if (asprintf(&path, "%s/%s.XXXXXX", parent, name) < 0) return NULL;
    if (!mkdtemp(path)) {
        fprintf(stderr, "d9_bench: cannot create %s: %s\n", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)remove(path); /* best effort: keep going */
    return 0;
}

void bench_remove_tree(const char *path) {
    if (path) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t g_tree_bytes;
static int add_size(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    if (type == FTW_F) g_tree_bytes += (uint64_t)st->st_size;
    return 0;
}

uint64_t bench_tree_bytes(const char *path) {
    g_tree_bytes = 0;
    nftw(path, add_size, 16, FTW_PHYS);
    return g_tree_bytes;
}

int bench_start(const char *trace_dir, int schedstat) {
    d9_config cfg;
    d9_config_init(&cfg);
    /* D9_BENCH_CONFIG_FROM_ENV=1: the DIAL9_* / AWS_* environment on top of the defaults, so
     * bench/s3/run.sh measures the hooks while the pipeline compresses and uploads to S3 */
    const char *from_env = getenv("D9_BENCH_CONFIG_FROM_ENV");
    if (from_env && !strcmp(from_env, "1") && d9_config_from_env(&cfg) != 0) {
        fprintf(stderr, "d9_bench: DIAL9_* configuration: %s\n", d9_last_error());
        return -1;
    }
    /* DIAL9_CLOCK alone is always taken: the hooks' cost is mostly the clock read, so whether
     * it is the TSC's must be something the reader can choose and sees in the header */
    if (bench_clock_from_env(&cfg.clock) != 0) return -1;
    cfg.trace_dir = trace_dir;
    cfg.service = "d9_bench";
    cfg.schedstat = schedstat != BENCH_SCHEDSTAT_OFF;
    if (schedstat >= 0) cfg.schedstat_resolution_us = (uint32_t)schedstat;
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_bench: d9_start: %s\n", d9_last_error());
        return -1;
    }
    return 0;
}

int bench_clock_from_env(d9_clock_mode *mode) {
    const char *v = getenv("DIAL9_CLOCK");
    if (!v || !*v || d9_clock_mode_parse(v, mode)) return 0;
    fprintf(stderr, "d9_bench: DIAL9_CLOCK=%s: expected auto, tsc or monotonic\n", v);
    return -1;
}

const char *bench_verdict(double value, double limit) { return value <= limit ? "ok" : "MISSED"; }

static void read_first_line(const char *path, const char *prefix, char *out, size_t len) {
    snprintf(out, len, "?");
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (prefix && strncmp(line, prefix, strlen(prefix)) != 0) continue;
        const char *v = prefix ? strchr(line, ':') : line;
        if (!v) continue;
        v += prefix ? 1 : 0;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out, len, "%s", v);
        out[strcspn(out, "\n")] = 0;
        break;
    }
    fclose(f);
}

void bench_machine_header(const bench_opts *o) {
    char cpu[128], clocksource[64], load[128];
    read_first_line("/proc/cpuinfo", "model name", cpu, sizeof cpu);
    read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", NULL,
                    clocksource, sizeof clocksource);
    read_first_line("/proc/loadavg", NULL, load, sizeof load);
    printf("dial9 micro-benchmark%s\n", o->short_mode ? " (short mode)" : "");
    printf("  machine      %s, %ld CPUs online, kernel clocksource %s\n", cpu,
           sysconf(_SC_NPROCESSORS_ONLN), clocksource);
    printf("  load average %s%s\n", load,
           atof(load) > 0.5 ? "   <- the machine is busy: numbers will be noisy" : "");
    d9_clock_mode mode = D9_CLOCK_AUTO;
    if (bench_clock_from_env(&mode) != 0) exit(2);
    /* as d9_start chooses (clock_auto.h), with its reason */
    bool tsc = d9_clock_select(mode) == D9_CLOCK_TSC;
    printf("  event clock  %s (%s)\n", tsc ? "TSC" : "CLOCK_MONOTONIC", d9_clock_reason());
    printf("  traces in    %s (removed at exit)\n", o->scratch);
}
