/* The recorder's own threads, found by name. Each names itself ("dial9-collect",
 * "dial9-pipeline", ...) as the first thing it does (core/own_thread_name.h), so a thread just
 * created still carries its creator's name: a test that looks right after d9_start may see
 * none of them. So a test lists the process's threads before d9_start (tt_threads_before_start),
 * and tt_recorder_threads waits until every thread made since has a dial9- name; it must run
 * before the test starts threads of its own.
 * Header-only. */
#ifndef D9_TESTS_RECORDER_THREADS_UTIL_H
#define D9_TESTS_RECORDER_THREADS_UTIL_H

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TT_MAX_THREADS 64

typedef struct tt_threads {
    uint32_t tids[TT_MAX_THREADS];
    char names[TT_MAX_THREADS][32]; /* comm is at most 15 characters */
    int n;
} tt_threads;

/* Every thread of this process, with its name. */
static inline void tt_list_threads(tt_threads *out) {
    memset(out, 0, sizeof *out);
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)) && out->n < TT_MAX_THREADS) {
        if (e->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* it has just ended */
        char *name = out->names[out->n];
        if (fgets(name, sizeof out->names[0], f)) name[strcspn(name, "\n")] = 0;
        fclose(f);
        out->tids[out->n++] = (uint32_t)atoi(e->d_name);
    }
    if (d) closedir(d);
}

static inline void *tt_no_op_thread(void *arg) { return arg; }

/* The threads before d9_start. A thread is started and joined first: ThreadSanitizer starts its
 * own background thread at the process's first pthread_create, which would otherwise look like
 * one of the recorder's that never names itself. */
static inline void tt_threads_before_start(tt_threads *out) {
    pthread_t th;
    if (pthread_create(&th, NULL, tt_no_op_thread, NULL) == 0) pthread_join(th, NULL);
    tt_list_threads(out);
}

static inline bool tt_threads_has(const tt_threads *t, uint32_t tid) {
    for (int i = 0; i < t->n; i++)
        if (t->tids[i] == tid) return true;
    return false;
}

/* The threads made since `before` (the recorder's), once every one of them has a dial9- name;
 * false if some did not get one within 120 s (a safety net). */
static inline bool tt_recorder_threads(const tt_threads *before, tt_threads *own) {
    for (int tries = 0; tries < 120 * 100; tries++) {
        tt_threads now;
        tt_list_threads(&now);
        memset(own, 0, sizeof *own);
        bool all_named = true;
        for (int i = 0; i < now.n; i++) {
            if (tt_threads_has(before, now.tids[i])) continue;
            all_named &= strncmp(now.names[i], "dial9-", 6) == 0;
            own->tids[own->n] = now.tids[i];
            memcpy(own->names[own->n++], now.names[i], sizeof now.names[i]);
        }
        if (all_named) return true;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return false;
}

/* How many of them are named `name`. */
static inline int tt_threads_named(const tt_threads *t, const char *name) {
    int n = 0;
    for (int i = 0; i < t->n; i++) n += strcmp(t->names[i], name) == 0;
    return n;
}

#endif
