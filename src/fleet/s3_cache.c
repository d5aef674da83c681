/* The local cache of S3 objects (s3_cache.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fleet/s3_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cache_sidecar.h"
#include "common/plain_number.h"

#define MIB ((uint64_t)1024 * 1024)
#define DEFAULT_MAX_MB 2048
#define GET_ATTEMPTS 4

int d9_s3_cache_mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

int d9_s3_cache_root(char *out, size_t len, char *err, size_t errlen) {
    const char *v = getenv("DIAL9_S3_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (v && *v) snprintf(out, len, "%s", v);
    else if (xdg && *xdg) snprintf(out, len, "%s/dial9/s3", xdg);
    else if (home && *home) snprintf(out, len, "%s/.cache/dial9/s3", home);
    else {
        snprintf(err, errlen, "no cache directory: set DIAL9_S3_CACHE_DIR (or HOME)");
        return -1;
    }
    if (d9_s3_cache_mkdirs(out) != 0) {
        snprintf(err, errlen, "cache directory %s: %s", out, strerror(errno));
        return -1;
    }
    return 0;
}

int d9_s3_cache_bound(uint64_t *bytes, char *err, size_t errlen) {
    *bytes = DEFAULT_MAX_MB * MIB;
    const char *b = getenv("DIAL9_S3_CACHE_MAX_MB");
    if (!b || !*b) return 0;
    uint64_t v;
    if (!d9_plain_u64(b, 1, UINT64_MAX / MIB, &v)) {
        snprintf(err, errlen, "DIAL9_S3_CACHE_MAX_MB=\"%s\": expected MiB above 0 (decimal digits only, no sign)", b);
        return -1;
    }
    *bytes = v * MIB;
    return 0;
}

void d9_s3_cache_touch(const char *path) {
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[1].tv_nsec = UTIME_OMIT; /* the modification time is the download's: readers key on it */
    utimensat(AT_FDCWD, path, t, 0);
}

bool d9_s3_cache_holds(const char *path, const char *key, uint64_t size) {
    char side[2 * PATH_MAX + 16];
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) return false;
    if (!d9_cache_sidecar_path(path, side, sizeof side)) return false;
    return d9_cache_sidecar_names(open(side, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), key);
}

/* Eviction: every cached file with its last use; the oldest not kept nor locked go first. */
typedef struct cached { char *path; struct timespec used; uint64_t size; } cached;
static struct { cached *v; size_t n, cap; uint64_t total; } walk_state;

static int note_file(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    if (flag != FTW_F || d9_cache_is_sidecar(path)) return 0; /* a sidecar goes with its file */
    if (walk_state.n == walk_state.cap) {
        size_t cap = walk_state.cap ? walk_state.cap * 2 : 256;
        cached *v = realloc(walk_state.v, cap * sizeof *v);
        if (!v) return 1;
        walk_state.v = v;
        walk_state.cap = cap;
    }
    char *p = strdup(path);
    if (!p) return 1;
    walk_state.v[walk_state.n++] = (cached){p, st->st_atim, (uint64_t)st->st_size};
    walk_state.total += (uint64_t)st->st_size;
    return 0;
}

static int by_use(const void *a, const void *b) {
    const cached *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->path, y->path);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Unlink path unless a reader holds a lock on it (it is being served or fetched). */
static bool remove_unless_used(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return errno == ENOENT; /* gone already: its room is free */
    bool removed = false;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) removed = unlink(path) == 0;
    close(fd); /* releases the lock */
    char side[2 * PATH_MAX + 16];
    if (removed && d9_cache_sidecar_path(path, side, sizeof side)) unlink(side);
    return removed;
}

uint64_t d9_s3_cache_evict(const char *root, uint64_t bound, uint64_t incoming, char **keep, size_t nkeep) {
    memset(&walk_state, 0, sizeof walk_state);
    nftw(root, note_file, 16, FTW_PHYS);
    if (walk_state.n) qsort(walk_state.v, walk_state.n, sizeof *walk_state.v, by_use);
    for (size_t i = 0; i < walk_state.n && walk_state.total + incoming > bound; i++) {
        char *p = walk_state.v[i].path;
        if (nkeep && bsearch(&p, keep, nkeep, sizeof *keep, cmp_str)) continue;
        if (remove_unless_used(p)) walk_state.total -= walk_state.v[i].size;
    }
    uint64_t after = walk_state.total + incoming;
    for (size_t i = 0; i < walk_state.n; i++) free(walk_state.v[i].path);
    free(walk_state.v);
    memset(&walk_state, 0, sizeof walk_state);
    return after;
}

int d9_s3_cache_fetch(d9_s3_client *c, const char *key, uint64_t size, const char *path, char *err, size_t errlen) {
    char dir[2 * PATH_MAX], tmp[2 * PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (d9_s3_cache_mkdirs(dir) != 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.part", path);
    d9_s3_result r = D9_S3_RETRY;
    for (int attempt = 0; attempt < GET_ATTEMPTS && r == D9_S3_RETRY; attempt++) {
        if (attempt) sleep(1u << (attempt - 1));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
            return -1;
        }
        flock(fd, LOCK_SH | LOCK_NB); /* in use: not evicted while it grows */
        d9_s3_answer ans = D9_S3_ANSWER_INIT;
        ans.out_fd = fd;
        r = d9_s3_request(c, "GET", key, "", NULL, 0, NULL, &ans, NULL, NULL, err, errlen);
        d9_s3_answer_free(&ans);
        if (r == D9_S3_OK && ans.written != size) {
            snprintf(err, errlen, "GET s3://%s/%s: %" PRIu64 " bytes, the listing said %" PRIu64,
                     d9_s3_client_bucket(c), key, ans.written, size);
            r = D9_S3_RETRY;
        }
        if (r == D9_S3_OK && rename(tmp, path) != 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            r = D9_S3_REJECTED;
        }
        if (r == D9_S3_OK && d9_cache_sidecar_write(path, key, err, errlen) != 0) r = D9_S3_REJECTED;
        if (close(fd) != 0 && r == D9_S3_OK) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            unlink(path);
            return -1;
        }
    }
    if (r != D9_S3_OK) {
        unlink(tmp);
        return -1;
    }
    d9_s3_cache_touch(path);
    return 0;
}
