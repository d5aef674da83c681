/* The recorder's own threads, found by name. Each names itself ("dial9-collect",
 * "dial9-pipeline", ...) as the first thing it does (core/own_thread_name.h), so a thread just
 * created still carries its creator's name: a test that looks right after d9_start may see
 * none of them. tt_recorder_threads waits until every thread of the process but the caller's
 * has a dial9- name, so it must be called while the process has no thread of its own besides
 * the caller (right after d9_start, before the test starts its workers). Header-only. */
#ifndef D9_TESTS_RECORDER_THREADS_UTIL_H
#define D9_TESTS_RECORDER_THREADS_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct tt_thread_names {
    uint32_t tids[16];
    char names[16][32]; /* comm is at most 15 characters; as large as the read buffer */
    int n;              /* the dial9- threads */
    int unnamed;        /* threads other than the caller without a dial9- name */
} tt_thread_names;

static inline void tt_read_thread_names(tt_thread_names *out) {
    memset(out, 0, sizeof *out);
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    uint32_t self = (uint32_t)gettid();
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        uint32_t tid = (uint32_t)atoi(e->d_name);
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* it has just ended */
        if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
        fclose(f);
        if (tid == self) continue;
        if (strncmp(name, "dial9-", 6) != 0) {
            out->unnamed++;
        } else if (out->n < 16) {
            out->tids[out->n] = tid;
            snprintf(out->names[out->n], sizeof out->names[0], "%s", name);
            out->n++;
        }
    }
    if (d) closedir(d);
}

/* Waits (120 s at most, a safety net) until no thread but the caller lacks a dial9- name.
 * Returns false if some never got one. */
static inline bool tt_recorder_threads(tt_thread_names *out) {
    for (int i = 0; i < 120 * 100; i++) {
        tt_read_thread_names(out);
        if (out->unnamed == 0) return true;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return false;
}

/* How many of them are named `name`. */
static inline int tt_threads_named(const tt_thread_names *t, const char *name) {
    int n = 0;
    for (int i = 0; i < t->n; i++) n += strcmp(t->names[i], name) == 0;
    return n;
}

#endif
