/* Helpers of the flight recorder's tests (docs/flight-recorder.md): a recording child with its
 * own environment, the dump directories it left, and their manifests. Header-only. */
#ifndef D9_TESTS_FLIGHT_TEST_UTIL_H
#define D9_TESTS_FLIGHT_TEST_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/flight_rule_wake.h"
#include "dial9/dial9.h"

#include "trace_files_util.h"

/* The environment every scenario starts from: its own trace and dump directories, nothing of
 * the caller's DIAL9_* settings. */
static inline void ft_env(const char *base) {
    static const char *vars[] = {"DIAL9_MODE", "DIAL9_TRIGGERS", "DIAL9_DUMPS", "DIAL9_DUMP_LOOKBACK_SECS",
                                 "DIAL9_DUMP_LOOKFORWARD_SECS", "DIAL9_DUMP_DEBOUNCE_SECS", "DIAL9_DUMP_MAX_PER_HOUR",
                                 "DIAL9_FLIGHT_MEMORY_MB", "DIAL9_FLIGHT_KEEP_SECS", "DIAL9_FLIGHT_SEGMENT_MS",
                                 "DIAL9_DUMP_DIR", "DIAL9_S3_BUCKET", "DIAL9_DUMP_GIVE_UP_MS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    char path[512];
    snprintf(path, sizeof path, "%s/traces", base);
    setenv("DIAL9_TRACE_DIR", path, 1);
    snprintf(path, sizeof path, "%s/dumps", base);
    setenv("DIAL9_DUMP_DIR", path, 1);
    setenv("DIAL9_SCHEDULE_PROFILE_ENABLED", "0", 1); /* no kernel sources: fewer moving parts */
    setenv("DIAL9_TASK_DUMPS", "0", 1);
}

/* Run fn in a child (exit status its return value); the child's exit status, -1 if killed. */
static inline int ft_run_child(int (*fn)(void *), void *arg) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(fn(arg));
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Names of the entries of dir (not . and ..), sorted; returns the count (0 when dir is gone). */
static inline int ft_entries(const char *dir, char names[][256], int max) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n < max) snprintf(names[n], 256, "%s", e->d_name);
        n++;
    }
    if (d) closedir(d);
    int m = n < max ? n : max;
    for (int i = 1; i < m; i++) /* insertion sort: a handful of names */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], 256);
            memcpy(names[j], names[j - 1], 256);
            memcpy(names[j - 1], t, 256);
        }
    return n;
}

/* A whole file as a string (malloc'd), or NULL. */
static inline char *ft_read(const char *path);

/* The dumps under {base}/dumps: how many there are (a test of one dump expects 1) in *count;
 * with one or more, the first's directory in dir and its manifest returned (malloc'd; NULL when
 * it has none). The block each flight test had its copy of. */
static inline char *ft_first_dump(const char *base, int *count, char *dir, size_t dir_len) {
    char path[512], names[16][256];
    snprintf(path, sizeof path, "%s/dumps", base);
    *count = ft_entries(path, names, 16);
    if (*count < 1) return NULL;
    snprintf(dir, dir_len, "%s/%s", path, names[0]);
    char file[1400];
    snprintf(file, sizeof file, "%s/manifest.json", dir);
    return ft_read(file);
}

/* The first dump's manifest is written (it comes last: the dump is whole); its path in out. */
static inline bool ft_manifest_written(const char *base, char *out, size_t len) {
    char path[512], names[16][256];
    snprintf(path, sizeof path, "%s/dumps", base);
    if (ft_entries(path, names, 16) < 1) return false;
    snprintf(out, len, "%s/%s/manifest.json", path, names[0]);
    return access(out, F_OK) == 0;
}

/* A whole file as a string (malloc'd), or NULL. */
static inline char *ft_read(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            buf = realloc(buf, cap);
        }
        size_t n = fread(buf + len, 1, 4096, f);
        len += n;
        if (n == 0) break;
    }
    fclose(f);
    buf[len] = 0;
    return buf;
}

/* The output and exit status of a shell command. */
static inline char *ft_capture(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    char *buf = malloc(1 << 16);
    size_t len = fread(buf, 1, (1 << 16) - 1, p);
    buf[len] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

/* Built with ASan or TSan: their own fault handlers end a crashing child, not its signal. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FT_SANITIZED 1
#endif
#endif
#ifndef FT_SANITIZED
#define FT_SANITIZED 0
#endif

/* Wait until one of the first dumps under {base}/dumps has its manifest (it comes last: that
 * dump is whole, and the rotation its seal asked for is done). ctest's timeout is the bound. */
static inline void ft_wait_dump_manifest(const char *base) {
    char names[4][256], path[1024];
    for (;;) {
        snprintf(path, sizeof path, "%s/dumps", base);
        int n = ft_entries(path, names, 4);
        for (int i = 0; i < n && i < 4; i++) {
            char file[1400];
            snprintf(file, sizeof file, "%s/%s/manifest.json", path, names[i]);
            if (access(file, F_OK) == 0) return;
        }
        usleep(10000);
    }
}


/* Sleep ms milliseconds, never less (resumed when a signal cuts it short). */
static inline void ft_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* The memory-mode scenario of a rule's test: ft_env, then rule triggers, one segment sealed
 * only when asked (or at stop), a 5 s look-back and no look-forward. */
static inline void ft_memory_rule_env(const char *base, const char *triggers) {
    ft_env(base);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_TRIGGERS", triggers, 1);
    setenv("DIAL9_FLIGHT_SEGMENT_MS", "3600000", 1);
    setenv("DIAL9_DUMP_LOOKBACK_SECS", "5", 1);
    setenv("DIAL9_DUMP_LOOKFORWARD_SECS", "0", 1);
}

/* d9_start with the configuration of the environment; false, said on stderr, when it fails. */
static inline bool ft_start_from_env(void) {
    d9_config cfg;
    if (d9_config_from_env(&cfg) != D9_OK || d9_start(&cfg) != D9_OK) {
        fprintf(stderr, "start: %s\n", d9_last_error());
        return false;
    }
    return true;
}

/* Wait up to 30 s for the first dump's manifest (ft_manifest_written); its path in out. */
static inline bool ft_wait_manifest(const char *base, char *out, size_t len) {
    for (int waited = 0; waited < 30000; waited += 10) {
        if (ft_manifest_written(base, out, len)) return true;
        ft_sleep_ms(10);
    }
    return false;
}


/* The end of a rule's wake scenario in its child: the dump's manifest waited for (30 s at the
 * most), the rule wakes counted since wakes_before (printed as "{what} wakes: N"), the worker
 * ended and the recorder stopped; 0 when the dump and a wake both came, else 4 with the
 * reason (no_wake: what a missing wake means) on stderr. */
static inline int ft_rule_wake_end(const char *base, uint64_t wakes_before, const char *what, const char *no_wake) {
    char manifest[1024];
    bool seen = ft_wait_manifest(base, manifest, sizeof manifest);
    uint64_t wakes = d9_rule_wake_count() - wakes_before;
    d9_worker_end();
    d9_stop();
    printf("%s wakes: %llu\n", what, (unsigned long long)wakes);
    fflush(stdout); /* the child ends with _exit */
    if (!seen) fprintf(stderr, "no dump within 30 s: nothing drained before DIAL9_FLUSH_MS\n");
    if (wakes < 1) fprintf(stderr, "%s\n", no_wake);
    return seen && wakes >= 1 ? 0 : 4;
}

#endif
