/* Expansion of PATH arguments into trace files (see trace_paths.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "format/trace_paths.h"
#include "format/dec_open_regular.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 32 /* deeper directories are not searched (and symlinked ones never) */

static int push(d9_path_list *l, char *path) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **p = realloc(l->paths, cap * sizeof *p);
        if (!p) return -1;
        l->paths = p;
        l->cap = cap;
    }
    l->paths[l->count++] = path;
    return 0;
}

int d9_path_list_add(d9_path_list *l, const char *path) {
    char *copy = strdup(path);
    if (!copy || push(l, copy) != 0) {
        free(copy);
        return -1;
    }
    return 0;
}

void d9_path_list_free(d9_path_list *l) {
    for (size_t i = 0; i < l->count; i++) free(l->paths[i]);
    for (size_t i = 0; i < l->skipped_count; i++) free(l->skipped[i]);
    free(l->skipped);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

static int walk(const char *dir, int depth, d9_path_list *out) {
    if (depth > MAX_DEPTH) return 0;
    DIR *d = opendir(dir);
    if (!d) {
        /* the argument itself: an error (its message says why); a subdirectory: skipped and
         * named (as find(1) reports and goes on), the readers' exit status says so */
        if (depth == 0) return -2;
        char *why;
        if (asprintf(&why, "%s: %s", dir, strerror(errno)) < 0) return -1;
        char **v = realloc(out->skipped, (out->skipped_count + 1) * sizeof *v);
        if (!v) {
            free(why);
            return -1;
        }
        out->skipped = v;
        out->skipped[out->skipped_count++] = why;
        return 0;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *path;
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0) {
            rc = -1;
            break;
        }
        struct stat st;
        if (lstat(path, &st) != 0) {
            free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = walk(path, depth + 1, out);
            free(path);
        } else if (d9_is_trace_file_name(e->d_name) &&
                   (S_ISREG(st.st_mode) || (stat(path, &st) == 0 && S_ISREG(st.st_mode)))) {
            if (push(out, path) != 0) {
                free(path);
                rc = -1;
            }
        } else {
            free(path);
        }
    }
    closedir(d);
    return rc;
}

static int cmp_paths(const void *a, const void *b) {
    const char *pa = *(char *const *)a, *pb = *(char *const *)b;
    const char *sa = strrchr(pa, '/'), *sb = strrchr(pb, '/');
    size_t da = sa ? (size_t)(sa - pa) : 0, db = sb ? (size_t)(sb - pb) : 0;
    /* run directory first */
    size_t m = da < db ? da : db;
    int c = memcmp(pa, pb, m);
    if (c) return c;
    if (da != db) return da < db ? -1 : 1;
    const char *ba = sa ? sa + 1 : pa, *bb = sb ? sb + 1 : pb;
    uint64_t na, nb;
    d9_segment_kind ka, kb;
    bool sa_seg = d9_segment_name_parse(ba, &na, &ka), sb_seg = d9_segment_name_parse(bb, &nb, &kb);
    /* numbered segments in order, other trace files after them */
    if (sa_seg != sb_seg) return sa_seg ? -1 : 1;
    if (sa_seg && na != nb) return na < nb ? -1 : 1;
    return strcmp(ba, bb);
}

int (*d9_remote_paths)(const char *arg, d9_path_list *out, char *err, size_t errlen);

int d9_expand_paths(int n, char *const *args, d9_path_list *out, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        if (d9_remote_paths && strncmp(args[i], "s3://", 5) == 0) {
            if (d9_remote_paths(args[i], out, err, errlen) != 0) return -1;
            continue;
        }
        struct stat st;
        if (stat(args[i], &st) != 0) {
            snprintf(err, errlen, "%s: %s", args[i], strerror(errno));
            return -1;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            /* Never opened: reading a FIFO would wait for a writer forever. */
            snprintf(err, errlen, "%s: not a regular file or directory (%s)", args[i],
                     d9_file_kind_name(st.st_mode));
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (d9_path_list_add(out, args[i]) != 0) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            continue;
        }
        size_t first = out->count;
        /* drop trailing slashes so paths read dir/trace.0.bin */
        char *dir = strdup(args[i]);
        if (!dir) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t k = strlen(dir); k > 1 && dir[k - 1] == '/'; k--) dir[k - 1] = '\0';
        int rc = walk(dir, 0, out), walk_errno = errno;
        free(dir);
        if (rc == -2) {
            snprintf(err, errlen, "%s: %s", args[i], strerror(walk_errno));
            return -1;
        }
        if (rc != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (out->count == first) {
            snprintf(err, errlen, "%s: no trace files (*.bin, *.bin.gz, *.bin.zst, *.bin.active) found", args[i]);
            return -1;
        }
        qsort(out->paths + first, out->count - first, sizeof *out->paths, cmp_paths);
    }
    return 0;
}
