/* The dumps of a bucket as runs of `dial9 serve --bucket` (s3_dump_runs.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fleet/s3_dump_runs.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/segment_name.h"
#include "fleet/s3_cache.h"
#include "fleet/s3_list.h"
#include "fleet/window_days.h"
#include "serve/serve_selection.h"
#include "sinks/s3_key.h"
#include "sinks/step_dump_upload.h"

#define MAX_DUMP_OBJECTS 100000

typedef struct dump_object {
    char *key;
    const char *rest; /* in key: date=D/service=S/instance=H/RUN.dumpN/FILE */
    uint64_t size;
} dump_object;

typedef struct dump_list {
    const char *prefix;
    dump_object *v;
    size_t n, cap;
} dump_list;

static int add_object(void *ctx, const char *key, uint64_t size, const char *last_modified, char *err,
                      size_t errlen) {
    (void)last_modified;
    dump_list *l = ctx;
    const char *rest = d9_dump_key_rest(key, l->prefix);
    if (!rest || l->n >= MAX_DUMP_OBJECTS) return 0;
    int depth = 0; /* date=D/service=S/instance=H/NAME/FILE: any other key is none of a dump's */
    for (const char *p = rest; *p; p++) depth += *p == '/';
    if (depth != 4) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        dump_object *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        l->v = v;
        l->cap = cap;
    }
    dump_object o = {.key = strdup(key), .size = size};
    if (!o.key) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    o.rest = o.key + (rest - key);
    l->v[l->n++] = o;
    return 0;
}

static int by_key(const void *a, const void *b) { return strcmp(((const dump_object *)a)->key, ((const dump_object *)b)->key); }

/* The value of component `name=` among the first `n` components of rest (escaped, as stored). */
static bool component(const char *rest, size_t dir_len, const char *name, char *out, size_t outlen) {
    size_t nl = strlen(name);
    for (const char *p = rest; p < rest + dir_len;) {
        const char *slash = memchr(p, '/', (size_t)(rest + dir_len - p));
        size_t cl = slash ? (size_t)(slash - p) : (size_t)(rest + dir_len - p);
        if (cl > nl && !strncmp(p, name, nl) && p[nl] == '=') {
            size_t vl = cl - nl - 1;
            if (vl >= outlen) return false;
            memcpy(out, p + nl + 1, vl);
            out[vl] = 0;
            return true;
        }
        if (!slash) break;
        p = slash + 1;
    }
    return false;
}

static bool value_is(const char *have, const char *want) {
    if (!want) return true;
    char esc[1024];
    return d9_hive_escape(want, esc, sizeof esc) == 0 && !strcmp(have, esc);
}

/* No empty, "." or ".." component: the run's name becomes a path under the cache (and the
 * selection file refuses such names, which would stop dial9-serve from starting at all). */
static bool safe_name(const char *name, size_t len) {
    for (const char *p = name; p <= name + len;) {
        const char *slash = memchr(p, '/', (size_t)(name + len - p));
        size_t cl = slash ? (size_t)(slash - p) : (size_t)(name + len - p);
        if (cl == 0 || (cl == 1 && p[0] == '.') || (cl == 2 && p[0] == '.' && p[1] == '.')) return false;
        if (!slash) break;
        p = slash + 1;
    }
    return true;
}

/* The dump (its directory: rest up to its last '/') is of the selection: service, instance,
 * and its trigger's day overlapping [from, to] (the key holds the day only). */
static bool selected(const char *rest, size_t dir_len, const d9_s3_selection *sel) {
    char service[512], instance[512], date[32];
    if (!component(rest, dir_len, "service", service, sizeof service) ||
        !component(rest, dir_len, "instance", instance, sizeof instance) ||
        !component(rest, dir_len, "date", date, sizeof date))
        return false;
    if (!value_is(service, sel->service) || !value_is(instance, sel->instance)) return false;
    struct tm tm = {0};
    if (sscanf(date, "%4d-%2d-%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3) return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t day = timegm(&tm);
    if (sel->has_from && day + 86400 <= sel->from) return false;
    if (sel->has_to && day > sel->to) return false;
    return true;
}

/* The run's cache directory with its dump marker (and its manifest, when stored). */
static int prepare_dir(d9_s3_client *c, const char *base, const char *run, const dump_object *manifest, char *err,
                       size_t errlen) {
    char dir[PATH_MAX + 1200], path[PATH_MAX + 1300];
    if (snprintf(dir, sizeof dir, "%s/%s", base, run) >= (int)sizeof dir || d9_s3_cache_mkdirs(dir) != 0) {
        snprintf(err, errlen, "%.1100s: cannot make its cache directory", dir);
        return -1;
    }
    snprintf(path, sizeof path, "%s/.dial9-dump", dir); /* a dump (common/dump_summary.h), complete or not */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%.1100s: cannot be created", path);
        return -1;
    }
    close(fd);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (!manifest) {
        (void)unlink(path); /* an earlier listing's copy: the bucket has none now */
        return 0;
    }
    return d9_s3_cache_fetch(c, manifest->key, manifest->size, path, err, errlen);
}

int d9_s3_dump_runs(d9_s3_client *c, const char *prefix, const d9_s3_selection *sel, const char *base,
                    FILE *selection, size_t *count, uint64_t *bytes, char *err, size_t errlen) {
    *count = 0;
    *bytes = 0;
    char lp[1200];
    dump_list l = {.prefix = prefix};
    int rc = 0;
    if (sel->has_from) {
        /* by day, as the segments are listed (s3_fetch.c), from an hour before the window: a
         * fleet's bucket holds dumps of every day, and a window needs only its own */
        time_t to = sel->has_to ? sel->to : time(NULL);
        for (d9_window_days day = d9_window_days_of(sel->from - D9_WINDOW_LEAD_SECS, to);
             rc == 0 && d9_window_days_next(&day);) {
            snprintf(lp, sizeof lp, "%s%s%s/date=%s/", prefix, prefix[0] ? "/" : "", D9_DUMPS_KEY_COMPONENT, day.date);
            rc = d9_s3_list_each(c, lp, add_object, &l, err, errlen);
        }
    } else {
        snprintf(lp, sizeof lp, "%s%s%s/", prefix, prefix[0] ? "/" : "", D9_DUMPS_KEY_COMPONENT);
        rc = d9_s3_list_each(c, lp, add_object, &l, err, errlen);
    }
    if (rc == 0 && l.n) qsort(l.v, l.n, sizeof *l.v, by_key);
    size_t pl = strlen(prefix) + (prefix[0] ? 1 : 0); /* the run's name: the key under the prefix */
    for (size_t i = 0; rc == 0 && i < l.n;) {
        const char *slash = strrchr(l.v[i].rest, '/');
        size_t dir_len = slash ? (size_t)(slash - l.v[i].rest) : 0;
        size_t key_dir_len = (size_t)(l.v[i].rest - l.v[i].key) + dir_len;
        size_t end = i;
        /* every key of the dump's directory (sorted: they are together) */
        while (end < l.n && strlen(l.v[end].key) > key_dir_len && !strncmp(l.v[end].key, l.v[i].key, key_dir_len) &&
               l.v[end].key[key_dir_len] == '/')
            end++;
        if (end == i) end = i + 1; /* a key with no directory of its own under dumps/: not a dump's */
        if (!slash || key_dir_len <= pl || !safe_name(l.v[i].key + pl, key_dir_len - pl) ||
            !selected(l.v[i].rest, dir_len, sel)) {
            i = end;
            continue;
        }
        char run[1200];
        snprintf(run, sizeof run, "%.*s", (int)(key_dir_len - pl), l.v[i].key + pl);
        const dump_object *manifest = NULL;
        size_t segs = 0;
        for (size_t k = i; k < end; k++) {
            const char *file = l.v[k].key + key_dir_len + 1;
            uint64_t seq;
            d9_segment_kind kind;
            if (!strcmp(file, "manifest.json")) manifest = &l.v[k];
            else if (d9_segment_name_parse(file, &seq, &kind) && kind != D9_SEGMENT_ACTIVE) segs++;
        }
        if (segs || manifest) rc = prepare_dir(c, base, run, manifest, err, errlen);
        if (rc == 0 && (segs || manifest)) {
            fputs("run\t", selection);
            d9_serve_selection_field(selection, run);
            fputs("\t-1\t-1\n", selection);
            for (size_t k = i; k < end; k++) {
                const char *file = l.v[k].key + key_dir_len + 1;
                uint64_t seq;
                d9_segment_kind kind;
                if (!d9_segment_name_parse(file, &seq, &kind) || kind == D9_SEGMENT_ACTIVE) continue;
                fputs("seg\t", selection);
                d9_serve_selection_field(selection, file);
                fprintf(selection, "\t%" PRIu64 "\t-1\t", l.v[k].size);
                d9_serve_selection_field(selection, l.v[k].key);
                fputc('\n', selection);
                *bytes += l.v[k].size;
            }
            (*count)++;
        }
        i = end;
    }
    for (size_t i = 0; i < l.n; i++) free(l.v[i].key);
    free(l.v);
    return rc;
}

int d9_s3_serve_dump_runs(const char *url, const d9_s3_selection *sel, FILE *selection, bool header, char *root_out,
                          size_t rootlen, size_t *count, uint64_t *bytes, char *err, size_t errlen) {
    char bucket[128], prefix[1024], root[PATH_MAX - 1200], base[PATH_MAX];
    *count = 0;
    *bytes = 0;
    if (d9_s3_split_url(url, bucket, sizeof bucket, prefix, sizeof prefix, err, errlen) != 0 ||
        d9_s3_cache_root(root, sizeof root, err, errlen) != 0)
        return -1;
    snprintf(base, sizeof base, "%s/%s%s%s", root, bucket, prefix[0] ? "/" : "", prefix);
    if (d9_s3_cache_mkdirs(base) != 0) {
        snprintf(err, errlen, "%.1100s: cannot make the cache directory", base);
        return -1;
    }
    d9_s3_client *c = d9_s3_client_for(url, bucket, err, errlen);
    if (!c) return -1;
    if (!header) {
        fputs("dial9-serve-selection 1\nsource\t", selection);
        d9_serve_selection_field(selection, url);
        fputc('\n', selection);
    }
    int rc = d9_s3_dump_runs(c, prefix, sel, base, selection, count, bytes, err, errlen);
    d9_s3_client_free(c);
    if (rc == 0) snprintf(root_out, rootlen, "%s", base);
    return rc;
}
