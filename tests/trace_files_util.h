/* Test helpers: temp directories, and reading every segment of a run directory in order
 * through the project's decoder. Header-only: each test is one program. */
#ifndef D9_TESTS_TRACE_FILES_UTIL_H
#define D9_TESTS_TRACE_FILES_UTIL_H

#include <dirent.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/decoder.h"

/* A fresh directory under /tmp (the caller removes it with d9t_rm_rf). */
static inline char *d9t_mkdtemp(const char *tag) {
    char *p = malloc(256);
    snprintf(p, 256, "/tmp/d9test-%s-XXXXXX", tag);
    if (!mkdtemp(p)) { perror("mkdtemp"); exit(2); }
    return p;
}

static inline void d9t_rm_rf(const char *path) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
}

/* d9t_tree_bytes's walk: nftw's callback gets no context (inline functions, so that a test not
 * using them pays no unused-variable warning). */
struct d9t_tree_walk {
    uint64_t total;
    bool trace_only;
};
static inline struct d9t_tree_walk *d9t_tree_walk(void) {
    static struct d9t_tree_walk w;
    return &w;
}

static inline bool d9t_is_trace_name(const char *name) {
    unsigned long long n;
    int end = 0;
    if (sscanf(name, "trace.%llu.bin%n", &n, &end) != 1 || end == 0) return false;
    const char *rest = name + end;
    return *rest == '\0' || strcmp(rest, ".gz") == 0 || strcmp(rest, ".active") == 0;
}

static inline int d9t_add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)flag;
    struct d9t_tree_walk *w = d9t_tree_walk();
    if (S_ISREG(st->st_mode) && (!w->trace_only || d9t_is_trace_name(path + ftw->base))) w->total += (uint64_t)st->st_size;
    return 0;
}

/* Bytes of the regular files under dir (all of them, or only trace file names). */
static inline uint64_t d9t_tree_bytes(const char *dir, bool trace_only) {
    *d9t_tree_walk() = (struct d9t_tree_walk){0, trace_only};
    nftw(dir, d9t_add_size, 16, FTW_PHYS);
    return d9t_tree_walk()->total;
}

/* Segment files of one run directory, sorted by segment number. Returns the count. */
static inline int d9t_list_segments(const char *run_dir, char ***out) {
    DIR *d = opendir(run_dir);
    int n = 0, cap = 16;
    char **names = malloc((size_t)cap * sizeof *names);
    long *nums = malloc((size_t)cap * sizeof *nums);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        long num;
        if (sscanf(e->d_name, "trace.%ld.bin", &num) != 1) continue;
        if (n == cap) {
            cap *= 2;
            names = realloc(names, (size_t)cap * sizeof *names);
            nums = realloc(nums, (size_t)cap * sizeof *nums);
        }
        names[n] = malloc(strlen(run_dir) + strlen(e->d_name) + 2);
        sprintf(names[n], "%s/%s", run_dir, e->d_name);
        nums[n++] = num;
    }
    if (d) closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort by number */
        for (int j = i; j > 0 && nums[j] < nums[j - 1]; j--) {
            long t = nums[j]; nums[j] = nums[j - 1]; nums[j - 1] = t;
            char *s = names[j]; names[j] = names[j - 1]; names[j - 1] = s;
        }
    free(nums);
    *out = names;
    return n;
}

static inline void d9t_free_list(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Decode one file, calling fn per event. Returns the decoder's final status. */
typedef void (*d9t_event_fn)(const d9_event *ev, void *ctx);
static inline d9_dec_status d9t_decode_file(const char *path, d9t_event_fn fn, void *ctx) {
    char err[256];
    d9_decoder *d = d9_dec_open_path(path, NULL, err, sizeof err);
    if (!d) {
        fprintf(stderr, "open %s: %s\n", path, err);
        return D9_DEC_ERROR;
    }
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) fn(&ev, ctx);
    d9_dec_status st = d9_dec_state(d);
    if (st != D9_DEC_END) fprintf(stderr, "%s: %s\n", path, d9_dec_message(d));
    d9_dec_close(d);
    return st;
}

/* Decode every segment of a run directory in order. Returns the number of files that did not
 * end cleanly. */
static inline int d9t_decode_run(const char *run_dir, d9t_event_fn fn, void *ctx) {
    char **files;
    int n = d9t_list_segments(run_dir, &files), bad = 0;
    for (int i = 0; i < n; i++) bad += d9t_decode_file(files[i], fn, ctx) != D9_DEC_END;
    d9t_free_list(files, n);
    return bad;
}

static inline uint64_t d9t_field_u(const d9_event *ev, const char *name) {
    uint64_t v = UINT64_MAX;
    d9_value_uint(d9_event_field(ev, name), &v);
    return v;
}

static inline int d9t_is(const d9_event *ev, const char *name) {
    return strcmp(ev->schema->name, name) == 0;
}

#endif
