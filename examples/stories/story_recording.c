/* The recorder's lifecycle for a story, its options, and small timing tools. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <dial9/dial9.h>

#include "story_kit.h"

void story_begin(int argc, char **argv, const char *about, double default_seconds,
                 story_options *out) {
    static const struct option longs[] = {{"seconds", required_argument, 0, 's'},
                                          {"trace-dir", required_argument, 0, 't'},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    *out = (story_options){.seconds = default_seconds};
    int ch;
    while ((ch = getopt_long(argc, argv, "s:t:h", longs, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 's':
            out->seconds = strtod(optarg, &end);
            if (*end || out->seconds <= 0 || out->seconds > 600) {
                fprintf(stderr, "%s: bad --seconds %s\n", argv[0], optarg);
                exit(2);
            }
            break;
        case 't': out->trace_dir = optarg; break;
        case 'h':
            printf("%s\nusage: %s [--seconds S] [--trace-dir D]   (recording: DIAL9_* variables)\n",
                   about, argv[0]);
            exit(0);
        default: exit(2);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "usage: %s [--seconds S] [--trace-dir D]\n", argv[0]);
        exit(2);
    }

    d9_config cfg;
    /* a bad DIAL9_* value: said, and the story runs without recording (cfg is disabled) */
    if (d9_config_from_env(&cfg) != 0)
        fprintf(stderr, "story: dial9: recording disabled: %s\n", d9_last_error());
    if (out->trace_dir) cfg.trace_dir = out->trace_dir;
    /* A story is a diagnosis session: every switch record and stack, unless the environment
     * sets a budget. Under the default 1 % budget the stories' 8-15 k switches/s get records
     * and stacks in one window of 4-16, and their rare signals (a futex sleep, fd-table growth
     * during a 1 s storm) can fall between the windows: with the events closed between
     * windows, story 2 kept its diagnosis 3 of 3 times, story 3 only 4 of 6
     * (docs/kernel-sources.md, "Cost governor"). */
    if (!getenv("DIAL9_OVERHEAD_BUDGET_PCT")) cfg.overhead_budget_pct = 0;
    d9_start_or_disabled(&cfg);
}

void story_end(void) {
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    printf("recorded  %llu events (%llu dropped)\n", (unsigned long long)st.events_recorded,
           (unsigned long long)st.events_dropped);
    printf("trace     %s\n", d9_run_dir() ? d9_run_dir() : "(not recording)");
    fflush(stdout);
}

uint64_t story_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) void story_spin_ns(uint64_t ns) {
    uint64_t deadline = story_now_ns() + ns;
    volatile uint64_t x = 1;
    while (story_now_ns() < deadline)
        for (int i = 0; i < 200; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
}

void story_sleep_ns(uint64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

uint64_t story_raise_fd_limit(uint64_t want) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur;
}
