/* Shared pieces of d9_bench: options, timing, distributions, scratch directories, and the
 * sections of the report (one file each). */
#ifndef D9_BENCH_H
#define D9_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <dial9/dial9.h>

typedef struct bench_opts {
    bool short_mode;          /* CI: fewer batches, 1 s sustained run; under 10 s in total */
    uint32_t batches;         /* timed batches per measurement */
    uint32_t batch_events;    /* events per timed batch */
    double sustained_secs;
    double sustained_rate;    /* events per second */
    const char *scratch;      /* directory holding every trace directory of this run */
} bench_opts;

/* Targets from the issue (the 2-vCPU reference VM). */
#define TARGET_NS_PER_EVENT 15.0
#define TARGET_NS_DISABLED 1.0
#define TARGET_BYTES_PER_POLL_EVENT 12.0

static inline uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* p10 / median / p90 of `n` samples (sorts them in place). */
typedef struct bench_dist {
    double p10, median, p90;
} bench_dist;
bench_dist bench_dist_of(double *samples, size_t n);

/* A fresh directory `{parent}/{name}` (made unique with a suffix); NULL on failure. */
char *bench_make_dir(const char *parent, const char *name);
/* Remove a directory tree (our scratch directories only). */
void bench_remove_tree(const char *path);
/* Bytes in the regular files under `path`. */
uint64_t bench_tree_bytes(const char *path);

/* Start recording into `trace_dir` with the default configuration, except `schedstat`.
 * Prints d9_last_error() and returns -1 on failure. */
/* Start recording with the defaults; schedstat: BENCH_SCHEDSTAT_OFF, or its resolution in us
 * (BENCH_SCHEDSTAT_DEFAULT: the default's). */
#define BENCH_SCHEDSTAT_OFF (-1)
#define BENCH_SCHEDSTAT_DEFAULT (-2)
int bench_start(const char *trace_dir, int schedstat);

/* "ok" or "MISSED" for a measured value against an upper bound. */
/* DIAL9_CLOCK (auto, tsc, monotonic) into *mode when set; -1 (said) when it is none of them. */
int bench_clock_from_env(d9_clock_mode *mode);
const char *bench_verdict(double value, double limit);

/* The sections of the report. */
void bench_machine_header(const bench_opts *o);
/* One clock read, system call and context switch on this host (bench/e2e/counted_cost.py). */
void bench_unit_costs(const bench_opts *o);
void bench_disabled_before_start(const bench_opts *o);
void bench_disabled_paused(const bench_opts *o);
void bench_hook_costs(const bench_opts *o);
void bench_bytes_per_event(const bench_opts *o);
void bench_sustained(const bench_opts *o);
/* --instructions N: record N poll pairs and report the recorder's counts (for callgrind). */
int bench_instructions(const bench_opts *o, uint64_t pairs);

#endif
