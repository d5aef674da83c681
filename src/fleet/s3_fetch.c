/* s3:// inputs for the CLI (see s3_fetch.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fleet/s3_fetch.h"
#include "fleet/s3_key_layout.h"
#include "fleet/s3_list.h"
#include "fleet/s3_cache.h"
#include "fleet/s3_dump_runs.h"
#include "fleet/wall_time.h"
#include "fleet/window_days.h"
#include "sinks/step_dump_upload.h" /* dumps/ keys are no fleet segments */
#include "serve/serve_selection.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dial9/dial9.h"
#include "aws/s3_client.h"
#include "sinks/s3_key.h"
#include "aws/sigv4.h"

#define MIB ((uint64_t)1024 * 1024)
#define MAX_OBJECTS 200000
#define SERVE_DEFAULT_WINDOW (24 * 3600) /* serve --bucket without --from */

static d9_s3_selection selection;

bool d9_s3_is_url(const char *arg) { return strncmp(arg, "s3://", 5) == 0; }
const d9_s3_selection *d9_s3_current_selection(void) { return &selection; }

static void drop_args(int *argc, char **argv, int at, int count) {
    for (int i = at; i + count <= *argc; i++) argv[i] = argv[i + count];
    *argc -= count;
}

int d9_s3_take_selection_args(int *argc, char **argv, char *err, size_t errlen) {
    bool wanted = false;
    for (int i = 1; i < *argc; i++)
        if (d9_s3_is_url(argv[i])) wanted = true;
    if (*argc > 1 && strcmp(argv[1], "serve") == 0)
        for (int i = 2; i < *argc; i++)
            if (!strcmp(argv[i], "--bucket") || !strncmp(argv[i], "--bucket=", 9)) wanted = true;
    if (!wanted) return 0;
    time_t now = time(NULL);
    for (int i = 2; i < *argc;) {
        if (!strcmp(argv[i], "--")) break;
        static const char *names[] = {"--service", "--instance", "--from", "--to"};
        int which = -1, used = 0;
        const char *value = NULL;
        for (int k = 0; k < 4; k++) {
            size_t nl = strlen(names[k]);
            if (!strcmp(argv[i], names[k])) {
                which = k;
                value = i + 1 < *argc ? argv[i + 1] : NULL;
                used = 2;
            } else if (!strncmp(argv[i], names[k], nl) && argv[i][nl] == '=') {
                which = k;
                value = argv[i] + nl + 1;
                used = 1;
            }
        }
        if (which < 0) {
            i++;
            continue;
        }
        if (!value) {
            snprintf(err, errlen, "%s needs a value", names[which]);
            return -1;
        }
        if (which == 0) selection.service = value;
        else if (which == 1) selection.instance = value;
        else {
            time_t t;
            if (d9_wall_time_is_old_spelling(value)) {
                /* it meant "before now" here and "before the trace's end" elsewhere: now it has
                 * the second meaning everywhere, and the first is spelled now-... */
                snprintf(err, errlen,
                         "usage: %s %s is a time before the trace's end; to choose s3:// objects by wall clock "
                         "write %s now%s (wall-clock times: %s)",
                         names[which], value, names[which], value, D9_WALL_TIME_FORMS);
                return -1;
            }
            if (d9_wall_time_parse(value, now, &t) != 0) {
                i++; /* a trace time: the command's own --from/--to */
                continue;
            }
            if (which == 2) selection.has_from = true, selection.from = t;
            else selection.has_to = true, selection.to = t;
        }
        drop_args(argc, argv, i, used);
    }
    return 0;
}

/* ---- listing ---- */

typedef struct object {
    char *key;
    uint64_t size;
    time_t start;     /* -1 unknown */
    long long index;  /* -1 unknown */
    d9_key_layout layout;
    char *service, *instance, *boot; /* Hive-escaped; NULL for OTHER, boot NULL until named for DATED */
    const char *ext;  /* the local name's compression suffix: ".gz", ".zst" or "" */
    char *group;      /* service=../instance=../boot=.. (or, for OTHER, the key's directory) */
    char *local;      /* path under the cache */
    bool keep;
} object;

typedef struct objects {
    object *v;
    size_t n, cap;
} objects;

/* Is the key's (escaped) value the one asked for? NULL want: any. */
static bool value_is(const char *have, const char *want) {
    if (!want) return true;
    char esc[1024];
    if (!have || d9_hive_escape(want, esc, sizeof esc) != 0) return false;
    return !strcmp(have, esc);
}

static time_t parse_last_modified(const char *s) {
    struct tm tm = {0};
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return timegm(&tm);
}

static bool safe_components(const char *key) {
    for (const char *p = key; *p;) {
        const char *slash = strchr(p, '/');
        size_t cl = slash ? (size_t)(slash - p) : strlen(p);
        if (cl == 0 || (cl == 1 && p[0] == '.') || (cl == 2 && p[0] == '.' && p[1] == '.')) return false;
        if (!slash) break;
        p = slash + 1;
    }
    return true;
}

/* Start, index, service, instance and boot of a key (s3_key_layout.h); false for keys that are
 * not trace files. Group and local name come later (name_runs): a DATED key has no boot id,
 * its run is found among its neighbours. */
static bool describe(object *o, time_t last_modified) {
    d9_key_parts kp;
    if (!safe_components(o->key) || d9_dump_key_is_dump(o->key) || !d9_key_parse(o->key, &kp)) return false;
    size_t kl = strlen(o->key);
    o->ext = kl > 7 && !strcmp(o->key + kl - 7, ".bin.gz") ? ".gz" : kl > 8 && !strcmp(o->key + kl - 8, ".bin.zst") ? ".zst" : "";
    o->start = kp.start >= 0 ? (time_t)kp.start : last_modified;
    o->index = kp.index;
    o->layout = kp.layout;
    if (kp.layout == D9_KEY_OTHER) return true;
    if (!(o->service = strdup(kp.service)) || !(o->instance = strdup(kp.instance))) return false;
    return kp.layout == D9_KEY_DATED || (o->boot = strdup(kp.boot)) != NULL;
}

static int by_run_order(const void *a, const void *b) { /* DATED keys: service, instance, time, n */
    const object *x = *(object *const *)a, *y = *(object *const *)b;
    int c = strcmp(x->service, y->service);
    if (!c) c = strcmp(x->instance, y->instance);
    if (c) return c;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int by_boot_order(const void *a, const void *b) { /* service, instance, boot, time, n */
    const object *x = *(object *const *)a, *y = *(object *const *)b;
    int c = strcmp(x->boot, y->boot);
    return c ? c : by_run_order(a, b);
}

/* Two recordings of one instance and boot (the process restarted, or two ran at once) have
 * the same service, instance and boot in their keys and both count segments from 0: their
 * objects would share local paths (trace.0.bin of each). A boot whose segment numbers repeat
 * is cut into recordings, each named run-{epoch of its first segment listed} below the boot:
 * in time order, a segment joins the recording with the highest segment number below its own
 * (of those, the one whose last segment is the oldest: two at once advance in step), else it
 * starts one. A boot without a repeated number stays one run, as before. The local paths of
 * one selection are then distinct; the cache's sidecars (s3_cache.h) keep another
 * selection's file at the same path from being taken for this object. */
static int split_recordings(objects *os) {
    object **v = calloc(os->n ? os->n : 1, sizeof *v);
    size_t *chain = calloc(os->n ? os->n : 1, sizeof *chain); /* per chain: its last object's index in v */
    size_t *first = calloc(os->n ? os->n : 1, sizeof *first);
    int rc = v && chain && first ? 0 : -1;
    size_t nv = 0;
    for (size_t i = 0; rc == 0 && i < os->n; i++)
        if (os->v[i].layout != D9_KEY_OTHER && os->v[i].index >= 0) v[nv++] = &os->v[i];
    if (rc == 0 && nv) qsort(v, nv, sizeof *v, by_boot_order);
    for (size_t b0 = 0, b1; rc == 0 && b0 < nv; b0 = b1) {
        bool repeats = false;
        for (b1 = b0 + 1; b1 < nv && !strcmp(v[b1]->service, v[b0]->service) &&
                          !strcmp(v[b1]->instance, v[b0]->instance) && !strcmp(v[b1]->boot, v[b0]->boot);
             b1++)
            for (size_t k = b0; k < b1 && !repeats; k++) repeats = v[k]->index == v[b1]->index;
        if (!repeats) continue;
        size_t nchains = 0;
        for (size_t i = b0; i < b1; i++) {
            size_t best = nchains;
            for (size_t c = 0; c < nchains; c++) {
                const object *last = v[chain[c]];
                if (last->index >= v[i]->index) continue;
                const object *b = best < nchains ? v[chain[best]] : NULL;
                if (!b || last->index > b->index || (last->index == b->index && last->start < b->start)) best = c;
            }
            if (best == nchains) first[nchains++] = i;
            chain[best] = i;
            /* named by the first segment listed of the recording it joined */
            char *name = NULL, *old = v[i]->boot;
            size_t same_start = 0; /* recordings begun in the same second: -2, -3, ... */
            for (size_t c = 0; c < best; c++) same_start += v[first[c]]->start == v[first[best]]->start;
            if (same_start ? asprintf(&name, "%s/run-%lld-%zu", old, (long long)v[first[best]]->start, same_start + 1) < 0
                           : asprintf(&name, "%s/run-%lld", old, (long long)v[first[best]]->start) < 0) {
                rc = -1;
                break;
            }
            v[i]->boot = name;
            free(old);
        }
    }
    free(v);
    free(chain);
    free(first);
    return rc;
}

/* Group and local path of every object. Keys without a boot id (D9_KEY_DATED) are cut into
 * runs of one instance: in time order, a segment number that does not grow starts a new
 * recording, named boot=noboot-{epoch of its first segment listed}. */
static int name_runs(objects *os, const char *prefix) {
    object **dated = calloc(os->n ? os->n : 1, sizeof *dated);
    if (!dated) return -1;
    size_t nd = 0;
    for (size_t i = 0; i < os->n; i++)
        if (os->v[i].layout == D9_KEY_DATED) dated[nd++] = &os->v[i];
    if (nd) qsort(dated, nd, sizeof *dated, by_run_order);
    const object *first = NULL, *prev = NULL;
    for (size_t i = 0; i < nd; i++) {
        object *o = dated[i];
        if (!prev || strcmp(prev->service, o->service) || strcmp(prev->instance, o->instance) ||
            o->index <= prev->index)
            first = o;
        if (asprintf(&o->boot, "noboot-%lld", (long long)first->start) < 0) {
            o->boot = NULL;
            free(dated);
            return -1;
        }
        prev = o;
    }
    free(dated);
    if (split_recordings(os) != 0) return -1;
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < os->n; i++) {
        object *o = &os->v[i];
        int rc;
        if (o->layout != D9_KEY_OTHER) {
            rc = asprintf(&o->group, "service=%s/instance=%s/boot=%s", o->service, o->instance, o->boot);
            if (rc >= 0 && asprintf(&o->local, "%s/trace.%lld.bin%s", o->group, o->index, o->ext) < 0)
                rc = -1;
        } else { /* another layout: kept as it is under the prefix */
            const char *rel = pl && !strncmp(o->key, prefix, pl) ? o->key + pl : o->key;
            while (*rel == '/') rel++;
            const char *slash = strrchr(rel, '/');
            rc = asprintf(&o->group, "%.*s", slash ? (int)(slash - rel) : 0, rel);
            if (rc >= 0 && !(o->local = strdup(rel))) rc = -1;
        }
        if (rc < 0) return -1;
    }
    return 0;
}

/* One listed object: kept when its key reads as a segment of the layouts (describe). */
static int add_listed(void *ctx, const char *key, uint64_t size, const char *last_modified, char *err,
                      size_t errlen) {
    objects *out = ctx;
    if (out->n >= MAX_OBJECTS) return 0;
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 256;
        object *v = realloc(out->v, cap * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        out->v = v;
        out->cap = cap;
    }
    object o = {.key = strdup(key), .size = size};
    if (o.key && describe(&o, parse_last_modified(last_modified))) {
        out->v[out->n++] = o;
    } else {
        free(o.key);
        free(o.service);
        free(o.instance);
        free(o.boot);
    }
    return 0;
}

static int list_prefix(d9_s3_client *c, const char *list_prefix_s, objects *out, char *err, size_t errlen) {
    return d9_s3_list_each(c, list_prefix_s, add_listed, out, err, errlen);
}

static int by_group_index(const void *a, const void *b) {
    const object *x = a, *y = b;
    int c = strcmp(x->group, y->group);
    if (c) return c;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void objects_free(objects *os) {
    for (size_t i = 0; i < os->n; i++) {
        free(os->v[i].key);
        free(os->v[i].service);
        free(os->v[i].instance);
        free(os->v[i].boot);
        free(os->v[i].group);
        free(os->v[i].local);
    }
    free(os->v);
}

/* The selection for dial9-serve (src/serve/serve_selection.h): every run chosen, with the first
 * and last start of its segments from the keys, and its segments (local name, size, key). os is
 * sorted by group and index. */
static void write_manifest(FILE *f, const char *url, const objects *os) {
    fputs("dial9-serve-selection 1\nsource\t", f);
    d9_serve_selection_field(f, url);
    fputc('\n', f);
    for (size_t i = 0; i < os->n;) {
        size_t end = i + 1;
        while (end < os->n && !strcmp(os->v[end].group, os->v[i].group)) end++;
        long long first = -1, last = -1;
        bool any = false;
        for (size_t k = i; k < end; k++) {
            const object *o = &os->v[k];
            if (!o->keep) continue;
            any = true;
            if (o->start < 0) continue;
            if (first < 0 || o->start < first) first = o->start;
            if (o->start > last) last = o->start;
        }
        if (any) {
            fputs("run\t", f);
            d9_serve_selection_field(f, os->v[i].group[0] ? os->v[i].group : ".");
            fprintf(f, "\t%lld\t%lld\n", first, last);
            for (size_t k = i; k < end; k++) {
                const object *o = &os->v[k];
                if (!o->keep) continue;
                const char *slash = strrchr(o->local, '/');
                fputs("seg\t", f);
                d9_serve_selection_field(f, slash ? slash + 1 : o->local);
                fprintf(f, "\t%" PRIu64 "\t%lld\t", o->size, (long long)o->start);
                d9_serve_selection_field(f, o->key);
                fputc('\n', f);
            }
        }
        i = end;
    }
}

int d9_s3_split_url(const char *url, char *bucket, size_t blen, char *prefix, size_t plen, char *err, size_t errlen) {
    const char *rest = d9_s3_is_url(url) ? url + 5 : "";
    size_t n = strcspn(rest, "/");
    if (n == 0 || n >= blen) {
        snprintf(err, errlen, "%s: expected s3://BUCKET[/PREFIX]", url);
        return -1;
    }
    snprintf(bucket, blen, "%.*s", (int)n, rest);
    snprintf(prefix, plen, "%s", rest[n] ? rest + n + 1 : "");
    for (size_t k = strlen(prefix); k > 0 && prefix[k - 1] == '/'; k--) prefix[k - 1] = 0;
    return 0;
}

d9_s3_client *d9_s3_client_for(const char *url, const char *bucket, char *err, size_t errlen) {
    d9_config cfg;
    if (d9_config_from_env(&cfg) != 0) {
        snprintf(err, errlen, "%s", d9_last_error());
        return NULL;
    }
    cfg.s3_bucket = bucket;
    if (d9_config_validate(&cfg) != 0) {
        snprintf(err, errlen, "%s: %s", url, d9_last_error());
        return NULL;
    }
    return d9_s3_client_new(&cfg, err, errlen);
}

/* List what the selection takes under url; with fetch, GET what the cache lacks (out gets the
 * local files), else only list (out stays empty). manifest: the selection for dial9-serve.
 * kept and bytes: the objects taken and their size. */
static int fetch_selection(const char *url, const d9_s3_selection *sel, bool fetch, d9_path_list *out,
                           char *local_root, size_t rootlen, FILE *manifest, size_t *kept, uint64_t *bytes,
                           char *err, size_t errlen) {
    char bucket[128], prefix[1024];
    if (d9_s3_split_url(url, bucket, sizeof bucket, prefix, sizeof prefix, err, errlen) != 0) return -1;
    uint64_t bound;
    if (d9_s3_cache_bound(&bound, err, errlen) != 0) return -1;
    char root[PATH_MAX - 1024];
    if (d9_s3_cache_root(root, sizeof root, err, errlen) != 0) return -1;
    d9_s3_client *c = d9_s3_client_for(url, bucket, err, errlen);
    if (!c) return -1;

    time_t now = time(NULL);
    time_t to = sel->has_to ? sel->to : now, from = sel->from;
    objects os = {0};
    int rc = 0;
    if (sel->has_from) {
        /* By time prefix, from an hour before the window (the segment in progress at its
         * start): the current layout by day, under service= when one is asked for; the dated
         * layouts by hour ({date}/{HH}, the HH of {HHMM}: their service comes after the time),
         * by day when the window is longer than two days. */
        char svc[1024] = "";
        if (sel->service && d9_hive_escape(sel->service, svc, sizeof svc) != 0) svc[0] = 0;
        time_t t0 = from - D9_WINDOW_LEAD_SECS;
        for (d9_window_days day = d9_window_days_of(t0, to); rc == 0 && d9_window_days_next(&day);) {
            char lp[4096];
            snprintf(lp, sizeof lp, "%s%sversion=1/date=%s/%s%s%s", prefix, prefix[0] ? "/" : "", day.date,
                     svc[0] ? "service=" : "", svc, svc[0] ? "/" : "");
            rc = list_prefix(c, lp, &os, err, errlen);
        }
        time_t step = to - t0 <= 2 * 86400 ? 3600 : 86400;
        for (time_t h = t0 / step * step; rc == 0 && h <= to; h += step) {
            struct tm tm;
            gmtime_r(&h, &tm);
            char when[32], lp[4096];
            strftime(when, sizeof when, step == 3600 ? "%Y-%m-%d/%H" : "%Y-%m-%d/", &tm);
            snprintf(lp, sizeof lp, "%s%s%s", prefix, prefix[0] ? "/" : "", when);
            rc = list_prefix(c, lp, &os, err, errlen);
        }
    } else {
        char lp[1100];
        snprintf(lp, sizeof lp, "%s%s", prefix, prefix[0] ? "/" : "");
        rc = list_prefix(c, lp, &os, err, errlen);
    }
    if (rc == 0 && name_runs(&os, prefix) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    if (rc == 0) {
        if (os.n) qsort(os.v, os.n, sizeof *os.v, by_group_index);
        for (size_t i = 0; i < os.n; i++) {
            object *o = &os.v[i];
            o->keep = value_is(o->service, sel->service) && value_is(o->instance, sel->instance);
            if (!o->keep || o->start < 0) continue;
            /* a segment overlaps the window when it starts before its end and the next one of
             * its recording starts after its beginning */
            bool next_same = i + 1 < os.n && !strcmp(os.v[i + 1].group, o->group) && os.v[i + 1].start >= 0;
            if (o->start > to) o->keep = false;
            if (sel->has_from && (next_same ? os.v[i + 1].start < from : o->start < from - 3600)) o->keep = false;
        }
    }
    size_t nkeep = 0;
    uint64_t need = 0;
    char **keep = NULL;
    if (rc == 0) {
        keep = calloc(os.n ? os.n : 1, sizeof *keep);
        if (!keep) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    char base[PATH_MAX + 2048];
    snprintf(base, sizeof base, "%s/%s%s%s", root, bucket, prefix[0] ? "/" : "", prefix);
    for (size_t i = 0; rc == 0 && i < os.n; i++) {
        if (!os.v[i].keep) continue;
        if (asprintf(&keep[nkeep], "%s/%s", base, os.v[i].local) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        nkeep++;
        need += os.v[i].size;
    }
    if (rc == 0 && nkeep == 0) {
        snprintf(err, errlen, "%s: no trace objects match (%zu listed%s%s%s%s%s)", url, os.n,
                 sel->service ? ", service " : "", sel->service ? sel->service : "",
                 sel->instance ? ", instance " : "", sel->instance ? sel->instance : "",
                 sel->has_from ? ", in the time window" : "");
        rc = -1;
    }
    if (rc == 0 && !fetch && d9_s3_cache_mkdirs(base) != 0) { /* served before anything is fetched */
        snprintf(err, errlen, "%s: %s", base, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && fetch && need > bound) {
        snprintf(err, errlen, "%s: the selection is %" PRIu64 " MiB, more than the cache's %" PRIu64
                 " MiB (DIAL9_S3_CACHE_MAX_MB); narrow it with --service, --instance, --from/--to",
                 url, need / MIB, bound / MIB);
        rc = -1;
    }
    if (rc == 0 && fetch) {
        qsort(keep, nkeep, sizeof *keep, cmp_str);
        d9_s3_cache_evict(root, bound, need, keep, nkeep);
    }
    for (size_t i = 0; rc == 0 && fetch && i < os.n; i++) {
        object *o = &os.v[i];
        if (!o->keep) continue;
        char path[2 * PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", base, o->local) >= (int)sizeof path) continue;
        if (d9_s3_cache_holds(path, o->key, o->size)) {
            d9_s3_cache_touch(path); /* recently used */
        } else if (d9_s3_cache_fetch(c, o->key, o->size, path, err, errlen) != 0) {
            rc = -1;
            break;
        }
        if (d9_path_list_add(out, path) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0 && manifest) write_manifest(manifest, url, &os);
    if (kept) *kept = nkeep;
    if (bytes) *bytes = need;
    for (size_t i = 0; i < nkeep; i++) free(keep[i]);
    free(keep);
    objects_free(&os);
    d9_s3_client_free(c);
    if (rc == 0 && local_root) snprintf(local_root, rootlen, "%s", base);
    return rc;
}

int d9_s3_fetch_paths(const char *url, d9_path_list *out, char *local_root, size_t rootlen, char *err,
                      size_t errlen) {
    return fetch_selection(url, &selection, true, out, local_root, rootlen, NULL, NULL, NULL, err, errlen);
}

int d9_s3_fetch_selected(const char *url, const d9_s3_selection *sel, d9_path_list *out, char *err, size_t errlen) {
    return fetch_selection(url, sel, true, out, NULL, 0, NULL, NULL, NULL, err, errlen);
}

int d9_s3_paths(const char *url, d9_path_list *out, char *err, size_t errlen) {
    return d9_s3_fetch_paths(url, out, NULL, 0, err, errlen);
}

int d9_s3_serve_args(int *argc, char ***argvp, char *err, size_t errlen) {
    char **argv = *argvp;
    const char *bucket = NULL, *prefix = NULL;
    bool all = false;
    for (int i = 2; i < *argc;) {
        if (!strcmp(argv[i], "--all")) {
            all = true;
            drop_args(argc, argv, i, 1);
            continue;
        }
        const char **slot = !strncmp(argv[i], "--bucket", 8) ? &bucket : !strncmp(argv[i], "--prefix", 8) ? &prefix : NULL;
        const char *rest = argv[i] + 8;
        if (!slot || (*rest && *rest != '=')) {
            i++;
            continue;
        }
        if (*rest == '=') {
            *slot = rest + 1;
            drop_args(argc, argv, i, 1);
        } else if (i + 1 < *argc) {
            *slot = argv[i + 1];
            drop_args(argc, argv, i, 2);
        } else {
            snprintf(err, errlen, "usage: %s needs a value", argv[i]);
            return -1;
        }
    }
    if (!bucket && !prefix && !all) return 0;
    if (!bucket) {
        snprintf(err, errlen, "usage: --prefix and --all go with --bucket");
        return -1;
    }
    if (all && selection.has_from) {
        snprintf(err, errlen, "usage: --all or --from, not both");
        return -1;
    }
    /* A bucket holds a fleet's history: without --from, the last day (listed by its date and
     * hour prefixes), never the whole prefix unless --all asks for it. */
    if (!all && !selection.has_from) {
        selection.has_from = true;
        selection.from = (selection.has_to ? selection.to : time(NULL)) - SERVE_DEFAULT_WINDOW;
    }
    char url[2048];
    snprintf(url, sizeof url, "s3://%s/%s", bucket, prefix ? prefix : "dial9-traces");
    /* The selection goes to dial9-serve in a memfd it inherits (--selection /dev/fd/N): it
     * serves only these runs and segments, whatever else the cache holds, and nothing is left
     * behind in the cache when it stops. */
    int mfd = memfd_create("dial9-serve-selection", 0);
    FILE *manifest = mfd >= 0 ? fdopen(dup(mfd), "w") : NULL;
    if (!manifest) {
        snprintf(err, errlen, "selection for dial9-serve: %s", strerror(errno));
        if (mfd >= 0) close(mfd);
        return -1;
    }
    /* listed, not fetched: dial9-serve has its fetch step GET a run when it is opened */
    d9_path_list files = {0};
    static char root[PATH_MAX];
    size_t count = 0;
    uint64_t bytes = 0;
    int rc = fetch_selection(url, &selection, false, &files, root, sizeof root, manifest, &count, &bytes, err, errlen);
    d9_path_list_free(&files);
    /* the flight recorder's dumps under dumps/, runs of their own (a bucket may hold only them) */
    size_t dumps = 0;
    uint64_t dump_bytes = 0;
    if (rc == 0 || count == 0) {
        char no_match[1024];
        snprintf(no_match, sizeof no_match, "%s", err);
        int drc = d9_s3_serve_dump_runs(url, &selection, manifest, rc == 0, root, sizeof root, &dumps, &dump_bytes, err,
                                        errlen);
        if (rc != 0 && drc == 0 && !dumps) snprintf(err, errlen, "%s", no_match);
        else rc = drc;
    }
    if (fclose(manifest) != 0 && rc == 0) {
        snprintf(err, errlen, "selection for dial9-serve: %s", strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        close(mfd);
        return -1;
    }
    char since[64] = "all of it";
    if (selection.has_from) {
        struct tm tm;
        gmtime_r(&selection.from, &tm);
        strftime(since, sizeof since, "since %Y-%m-%d %H:%M:%S UTC", &tm);
    }
    fprintf(stderr, "dial9 serve: %zu objects (%.1f MiB) of %s (%s) listed; each run is fetched into %s when "
                    "opened\n", count, bytes / (double)MIB, url, since, root);
    if (dumps) fprintf(stderr, "dial9 serve: %zu flight recorder dumps (%.1f MiB) of %s/dumps listed\n", dumps,
                       dump_bytes / (double)MIB, url);
    static char selection_path[64], self[PATH_MAX];
    snprintf(selection_path, sizeof selection_path, "/dev/fd/%d", mfd);
    /* dial9-serve runs this very dial9 as its fetch step (`dial9 _serve-fetch`) */
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(err, errlen, "/proc/self/exe: %s", strerror(errno));
        close(mfd);
        return -1;
    }
    self[n] = '\0';
    char **v = calloc((size_t)*argc + 6, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        close(mfd);
        return -1;
    }
    memcpy(v, argv, (size_t)*argc * sizeof *v);
    v[(*argc)++] = "--selection";
    v[(*argc)++] = selection_path;
    v[(*argc)++] = "--fetcher";
    v[(*argc)++] = self;
    v[(*argc)++] = root;
    v[*argc] = NULL;
    *argvp = v; /* kept until exec */
    return 0;
}
