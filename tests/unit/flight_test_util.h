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
#include <unistd.h>

#include "trace_files_util.h"

/* The environment every scenario starts from: its own trace and dump directories, nothing of
 * the caller's DIAL9_* settings. */
static inline void ft_env(const char *base) {
    static const char *vars[] = {"DIAL9_MODE", "DIAL9_TRIGGERS", "DIAL9_DUMPS", "DIAL9_DUMP_LOOKBACK_SECS",
                                 "DIAL9_DUMP_LOOKFORWARD_SECS", "DIAL9_DUMP_DEBOUNCE_SECS", "DIAL9_DUMP_MAX_PER_HOUR",
                                 "DIAL9_FLIGHT_MEMORY_MB", "DIAL9_FLIGHT_KEEP_SECS", "DIAL9_FLIGHT_SEGMENT_MS",
                                 "DIAL9_DUMP_DIR", "DIAL9_S3_BUCKET"};
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

#endif
