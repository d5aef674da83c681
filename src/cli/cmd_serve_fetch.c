/* `dial9 _serve-fetch DIR` (hidden, not in `dial9 --help`): dial9-serve's fetch step. dial9-serve
 * keeps libcurl out of its process, so when a run of `dial9 serve --bucket` is opened and its
 * segments are not in the cache, it runs the dial9 that started it with this subcommand
 * (serve/fetch_jobs.h) and hands it, on standard input, a selection file (serve_selection.h)
 * naming the source and the segments to fetch: only segments of its own selection, so no
 * request can make it fetch another key.
 *
 * DIR must be the source's directory in the cache (s3_cache.h), where `dial9 serve --bucket`
 * put it. The segments asked for must fit in DIAL9_S3_CACHE_MAX_MB; room is made by evicting
 * the least recently used files not in use (being served: locked), the segments asked for
 * are kept, those missing (or of another size than listed) are fetched. Exit 0, or 1 with
 * one line on standard error saying why (dial9-serve answers it as the 502's text). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "fleet/s3_cache.h"
#include "fleet/s3_fetch.h"
#include "serve/serve_selection.h"

#define MIB ((uint64_t)1024 * 1024)

/* The segments asked for, as paths under dir, sorted (for the evictor's keep list). */
static char **local_paths(const d9_serve_selection *sel, const char *dir, size_t *n) {
    size_t total = 0;
    for (size_t i = 0; i < sel->count; i++) total += sel->runs[i].count;
    char **v = calloc(total ? total : 1, sizeof *v);
    if (!v) return NULL;
    *n = 0;
    for (size_t i = 0; i < sel->count; i++)
        for (size_t k = 0; k < sel->runs[i].count; k++)
            if (asprintf(&v[(*n)++], "%s/%s/%s", dir, sel->runs[i].name, sel->runs[i].segs[k].file) < 0) {
                v[--*n] = NULL;
                for (size_t j = 0; j < *n; j++) free(v[j]);
                free(v);
                return NULL;
            }
    return v;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool cached(const char *path, const d9_sel_seg *s) { return d9_s3_cache_holds(path, s->key, s->size); }

/* What was asked for, for messages: the run (or "N runs"). */
static const char *what(const d9_serve_selection *sel, char *buf, size_t len) {
    if (sel->count == 1) snprintf(buf, len, "run %s", sel->runs[0].name);
    else snprintf(buf, len, "%zu runs", sel->count);
    return buf;
}

static int fetch(const d9_serve_selection *sel, const char *dir_arg, char *err, size_t errlen) {
    char bucket[128], prefix[1024], root[PATH_MAX - 1200], dir[PATH_MAX + 1200], name[1200];
    uint64_t bound;
    if (!sel->source || d9_s3_split_url(sel->source, bucket, sizeof bucket, prefix, sizeof prefix, err, errlen) != 0 ||
        d9_s3_cache_bound(&bound, err, errlen) != 0 || d9_s3_cache_root(root, sizeof root, err, errlen) != 0) {
        if (!sel->source) snprintf(err, errlen, "the selection names no source");
        return -1;
    }
    snprintf(dir, sizeof dir, "%s/%s%s%s", root, bucket, prefix[0] ? "/" : "", prefix);
    char *want = d9_s3_cache_mkdirs(dir) == 0 ? realpath(dir, NULL) : NULL, *have = realpath(dir_arg, NULL);
    bool same = want && have && !strcmp(want, have);
    free(want);
    free(have);
    if (!same) {
        snprintf(err, errlen, "%.600s is not the cache directory of %.600s (%.600s)", dir_arg, sel->source, dir);
        return -1;
    }
    uint64_t need = 0, missing = 0;
    size_t n = 0;
    char **paths = local_paths(sel, dir, &n);
    if (!paths) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0, p = 0; i < sel->count; i++)
        for (size_t k = 0; k < sel->runs[i].count; k++, p++) {
            need += sel->runs[i].segs[k].size;
            if (!cached(paths[p], &sel->runs[i].segs[k])) missing += sel->runs[i].segs[k].size;
        }
    int rc = 0;
    if (need > bound) {
        snprintf(err, errlen, "%s: its segments take %.1f MiB, more than the cache's %.1f MiB "
                 "(DIAL9_S3_CACHE_MAX_MB): open a shorter window of it, or raise the bound",
                 what(sel, name, sizeof name), need / (double)MIB, bound / (double)MIB);
        rc = -1;
    }
    d9_s3_client *c = NULL;
    if (rc == 0 && missing) {
        char **keep = malloc(n * sizeof *keep);
        if (!keep) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else {
            memcpy(keep, paths, n * sizeof *keep);
            qsort(keep, n, sizeof *keep, cmp_str);
            uint64_t after = d9_s3_cache_evict(root, bound, missing, keep, n);
            free(keep);
            if (after > bound) {
                snprintf(err, errlen, "%s: no room in the cache (DIAL9_S3_CACHE_MAX_MB, %.1f MiB) for its %.1f MiB: "
                         "what it holds is being served; open it again when those downloads end",
                         what(sel, name, sizeof name), bound / (double)MIB, missing / (double)MIB);
                rc = -1;
            }
        }
        if (rc == 0 && !(c = d9_s3_client_for(sel->source, bucket, err, errlen))) rc = -1;
    }
    for (size_t i = 0, p = 0; rc == 0 && i < sel->count; i++)
        for (size_t k = 0; rc == 0 && k < sel->runs[i].count; k++, p++) {
            const d9_sel_seg *s = &sel->runs[i].segs[k];
            if (cached(paths[p], s)) d9_s3_cache_touch(paths[p]);
            else rc = d9_s3_cache_fetch(c, s->key, s->size, paths[p], err, errlen);
        }
    d9_s3_client_free(c);
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    return rc;
}

int d9_cmd_serve_fetch(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: dial9 _serve-fetch DIR < SELECTION (dial9-serve runs it)\n");
        return D9_EXIT_USAGE;
    }
    d9_serve_selection sel;
    char err[2048];
    if (d9_serve_selection_parse(&sel, stdin, "(standard input)", err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return D9_EXIT_USAGE;
    }
    int rc = fetch(&sel, argv[1], err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    d9_serve_selection_free(&sel);
    return rc == 0 ? D9_EXIT_OK : D9_EXIT_DATA;
}
