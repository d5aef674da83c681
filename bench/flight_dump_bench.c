/* d9_flight_dump_bench [EVENTS]: how long a dump of a 30 s look-back takes to reach the disk,
 * the target being "a 30 s look-back at 2 M events/s is on disk within 1 s" (60 M
 * events, the default). Memory mode records EVENTS poll events (flushed every 8192 pairs, so
 * none is dropped) as fast as the machine goes (under 30 s here, so the whole recording is in
 * the look-back), then d9_dump(30000, 0) is called and the time until the dump's manifest
 * exists (written last, after the segments and an fsync of the directory) is printed, with
 * the bytes and segments it holds. It prints figures; it asserts no time. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dial9/dial9.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first dump's manifest under dumps, read into buf once it exists. */
static bool manifest(const char *dumps, char *buf, size_t len) {
    DIR *d = opendir(dumps);
    struct dirent *e;
    bool found = false;
    while (d && !found && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/manifest.json", dumps, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, len - 1, f);
        buf[n] = 0;
        fclose(f);
        found = true;
    }
    if (d) closedir(d);
    return found;
}

/* The process's CPU seconds (user + system) and minor page faults so far. */
static void usage_now(double *cpu_s, long *faults) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    *faults = ru.ru_minflt;
}

static uint64_t json_u64(const char *json, const char *key) {
    const char *k = strstr(json, key);
    return k ? strtoull(k + strlen(key), NULL, 10) : 0;
}

int main(int argc, char **argv) {
    uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 60000000ull;
    const char *tmp = getenv("TMPDIR");
    char base[512], dir[600];
    snprintf(base, sizeof base, "%s/d9-flight-dump-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/traces", base);
    setenv("DIAL9_TRACE_DIR", dir, 1);
    snprintf(dir, sizeof dir, "%s/dumps", base);
    setenv("DIAL9_DUMP_DIR", dir, 1);
    setenv("DIAL9_MODE", "memory", 0); /* DIAL9_MODE=disk compares the recording's cost */
    setenv("DIAL9_DUMPS", "1", 1);      /* d9_dump in disk mode too */
    setenv("DIAL9_FLIGHT_MEMORY_MB", "4096", 0); /* the budget holds the whole look-back */
    setenv("DIAL9_SCHEDULE_PROFILE_ENABLED", "0", 1);
    setenv("DIAL9_TASK_DUMPS", "0", 1);
    d9_config cfg;
    if (d9_config_from_env(&cfg) != D9_OK || d9_start(&cfg) != D9_OK) {
        fprintf(stderr, "d9_flight_dump_bench: d9_start: %s\n", d9_last_error());
        return 1;
    }
    d9_worker_begin("bench", 0);
    const d9_loc *where = D9_HERE;
    double cpu0, cpu1;
    long faults0, faults1;
    usage_now(&cpu0, &faults0);
    double t0 = now_s();
    for (uint64_t i = 0; i < events / 2; i++) {
        if (i > 0 && i % 8192 == 0) d9_flush();
        d9_poll_begin((i & 63) + 1, where);
        d9_poll_end();
    }
    d9_flush();
    double recorded_s = now_s() - t0;
    usage_now(&cpu1, &faults1);
    d9_stats st;
    d9_get_stats(&st);
    if (recorded_s >= 29.0)
        fprintf(stderr, "d9_flight_dump_bench: recording took %.1f s: the 30 s look-back misses part of it\n",
                recorded_s);
    double asked = now_s();
    if (d9_dump(30000, 0, "d9_flight_dump_bench") != D9_OK) {
        fprintf(stderr, "d9_flight_dump_bench: d9_dump: %s\n", d9_last_error());
        return 1;
    }
    static char m[1 << 16];
    while (!manifest(dir, m, sizeof m) && now_s() - asked < 120) usleep(1000);
    double took = now_s() - asked;
    d9_worker_end();
    d9_stop();
    uint64_t bytes = json_u64(m, "\"bytes\": "), segments = json_u64(m, "\"segments\": ");
    printf("recorded %" PRIu64 " events (%" PRIu64 " dropped) in %.2f s (%.2f M events/s)\n", st.events_recorded,
           st.events_dropped, recorded_s, (double)st.events_recorded / recorded_s / 1e6);
    printf("recording (%s mode): %.3f s of CPU (every thread), %ld minor page faults\n", getenv("DIAL9_MODE"),
           cpu1 - cpu0, faults1 - faults0);
    printf("dump of a 30 s look-back: %" PRIu64 " segments, %.1f MB, manifest on disk %.3f s after d9_dump "
           "(%.0f MB/s)\n", segments, (double)bytes / 1e6, took, (double)bytes / 1e6 / took);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (getenv("D9_BENCH_KEEP")) printf("kept %s\n", base); /* to read the dump back */
    else if (system(cmd) != 0) fprintf(stderr, "d9_flight_dump_bench: could not remove %s\n", base);
    return m[0] ? 0 : 1;
}
