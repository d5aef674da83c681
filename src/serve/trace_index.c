/* The served directory's runs and segments, with cached decode results (see trace_index.h). */
#include "serve/trace_index.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cache_sidecar.h"
#include "common/json_writer.h"
#include "common/segment_name.h"
#include "format/schemas.h"
#include "format/trace_paths.h"
#include "serve/dump_info.h"
#include "serve/open_beneath.h"
#include "serve/url.h"

int d9_trace_index_init(d9_trace_index *ix, const char *root, char *err, size_t errlen) {
    memset(ix, 0, sizeof *ix);
    ix->root_fd = -1;
    char *real = realpath(root, NULL);
    if (!real) {
        snprintf(err, errlen, "%s: %s", root, strerror(errno));
        return -1;
    }
    int fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", root, errno == ENOTDIR ? "not a directory" : strerror(errno));
        free(real);
        return -1;
    }
    ix->root = real;
    ix->root_fd = fd;
    return 0;
}

static void free_runs(d9_trace_index *ix) {
    for (size_t i = 0; i < ix->run_count; i++) {
        free(ix->runs[i].name);
        free(ix->runs[i].segs);
    }
    free(ix->runs);
    ix->runs = NULL;
    ix->run_count = 0;
}

void d9_trace_index_free(d9_trace_index *ix) {
    free_runs(ix);
    for (size_t i = 0; i < ix->cache_count; i++) {
        if (!ix->cache[i]) continue;
        free(ix->cache[i]->path);
        free(ix->cache[i]);
    }
    free(ix->cache);
    free(ix->root);
    if (ix->root_fd >= 0) close(ix->root_fd);
    d9_string_table_free(&ix->cache_paths);
    memset(ix, 0, sizeof *ix);
    ix->root_fd = -1;
}

/* The path of a listed file relative to the root (the listing starts from ix->root), or
 * NULL for one that is not below it. */
static const char *relative(const d9_trace_index *ix, const char *path) {
    size_t n = strlen(ix->root);
    if (n == 1) n = 0; /* the root is "/" */
    if (strncmp(path, ix->root, n) != 0 || path[n] != '/') return NULL;
    return path + n + 1;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* N of a segment's name; -1 for other trace file names (and for an N beyond what the seg=
 * parameter can name). */
static long long segment_number(const char *name) {
    uint64_t n;
    d9_segment_kind kind;
    if (!d9_segment_name_parse(name, &n, &kind) || n > (uint64_t)LLONG_MAX) return -1;
    return (long long)n;
}

/* What a segment says of itself besides its events' times (see d9_segment.service). */
static void note_event(d9_segment *s, const d9_event *ev) {
    const d9_dec_binding *b = &ev->schema->bind;
    const d9_value *v = ev->values;
    uint64_t n;
    switch (b->role) {
    case D9_SCH_SEGMENT_METADATA: {
        int f = b->field[D9_KF_ENTRIES];
        if (s->service[0] || f < 0 || !v[f].present || v[f].type != D9_FT_STRING_MAP) break;
        for (uint32_t i = 0; i < v[f].map.count; i++) {
            const d9_dec_kv *kv = &v[f].map.items[i];
            if (kv->key.len == 7 && !memcmp(kv->key.ptr, "service", 7) && kv->value.len < sizeof s->service) {
                memcpy(s->service, kv->value.ptr, kv->value.len);
                s->service[kv->value.len] = '\0';
            }
        }
        break;
    }
    case D9_SCH_CLOCK_SYNC:
        if (!s->have_wall && ev->ts_ns && b->field[D9_KF_REALTIME_NS] >= 0 &&
            d9_value_uint(&v[b->field[D9_KF_REALTIME_NS]], &n) && n) {
            s->wall_minus_mono_ns = (int64_t)(n - ev->ts_ns);
            s->have_wall = true;
        }
        break;
    case D9_SCH_DROPPED_EVENTS:
        if (b->field[D9_KF_COUNT_FIELD] >= 0 && d9_value_uint(&v[b->field[D9_KF_COUNT_FIELD]], &n)) s->drops += n;
        break;
    case D9_SCH_TASK_DUMP:
        s->dumps++;
        break;
    default:
        break;
    }
}

/* Decodes the file open as fd (and closes it). */
static void decode(d9_trace_index *ix, d9_segment *s, int fd) {
    s->events = 0;
    s->have_ts = false;
    s->first_ns = s->last_ns = 0;
    s->clean_bytes = 0;
    s->message[0] = '\0';
    s->too_large = false;
    s->service[0] = '\0';
    s->have_wall = false;
    s->wall_minus_mono_ns = 0;
    s->drops = s->dumps = 0;
    d9_decoder *d = d9_dec_open_fd(fd, true, NULL, s->message, sizeof s->message);
    if (!d) {
        s->status = D9_DEC_ERROR;
        return;
    }
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) {
        s->events++;
        note_event(s, &ev);
        if (ev.schema->has_timestamp && ev.ts_ns != 0) { /* SymbolTableEntry says 0 */
            if (!s->have_ts || ev.ts_ns < s->first_ns) s->first_ns = ev.ts_ns;
            if (!s->have_ts || ev.ts_ns > s->last_ns) s->last_ns = ev.ts_ns;
            s->have_ts = true;
        }
        if (ix->max_decoded_bytes && d9_dec_get_stats(d)->bytes > ix->max_decoded_bytes) {
            s->too_large = true;
            break;
        }
    }
    if (s->too_large) { /* what came before the bound is indexed and served: whole frames */
        s->status = D9_DEC_TRUNCATED;
        snprintf(s->message, sizeof s->message,
                 "decodes to more than %" PRIu64 " MiB: indexed and served up to there (--max-decoded)",
                 ix->max_decoded_bytes >> 20);
        s->clean_bytes = d9_dec_get_stats(d)->bytes;
    } else {
        s->status = d9_dec_state(d);
        snprintf(s->message, sizeof s->message, "%s", d9_dec_message(d));
        /* damage: the viewer gets the bytes before it (its decoder does not skip damage) */
        s->clean_bytes = s->status == D9_DEC_DAMAGED ? d9_dec_get_stats(d)->first_damage_offset
                                                     : d9_dec_stop_offset(d);
    }
    s->gzip = d9_dec_get_stats(d)->gzip;
    ix->decoded_bytes += s->clean_bytes;
    d9_dec_close(d);
}

static bool unchanged(const d9_segment *s, const struct stat *st) {
    return s->size == (uint64_t)st->st_size && s->ino == st->st_ino && s->dev == st->st_dev &&
           s->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static void remember(d9_segment *s, const struct stat *st) {
    s->size = (uint64_t)st->st_size;
    s->ino = st->st_ino;
    s->dev = st->st_dev;
    s->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Is rel the copy of key (its sidecar says so, common/cache_sidecar.h)? Its size alone is no
 * proof: another recording's segment of the same number and size may sit at the same path. */
static bool holds_key(const d9_trace_index *ix, const char *rel, const char *key) {
    char side[PATH_MAX + 16];
    struct stat st;
    if (!d9_cache_sidecar_path(rel, side, sizeof side)) return false;
    return d9_cache_sidecar_names(d9_open_regular_beneath(ix->root_fd, side, &st), key);
}

bool d9_segment_revalidate(d9_trace_index *ix, d9_segment *s) {
    struct stat st;
    if (s->remote) return false;
    int fd = d9_open_regular_beneath(ix->root_fd, s->rel, &st);
    if (fd < 0) return false;
    if (!unchanged(s, &st)) {
        if (s->key && !holds_key(ix, s->rel, s->key)) {
            close(fd);
            return false;
        }
        remember(s, &st);
        decode(ix, s, fd);
    } else {
        close(fd);
    }
    return true;
}

/* The entry of path in the cache of segments, made on first sight (never decoded yet); NULL
 * when out of memory. */
static d9_segment *entry_for(d9_trace_index *ix, const char *path) {
    d9_string_entry *e = d9_string_table_get(&ix->cache_paths, path);
    if (!e) return NULL;
    if (e->index >= ix->cache_cap) {
        size_t cap = ix->cache_cap ? ix->cache_cap * 2 : 64;
        while (cap <= e->index) cap *= 2;
        d9_segment **p = realloc(ix->cache, cap * sizeof *p);
        if (!p) return NULL;
        memset(p + ix->cache_cap, 0, (cap - ix->cache_cap) * sizeof *p);
        ix->cache = p;
        ix->cache_cap = cap;
    }
    if (e->index >= ix->cache_count) ix->cache_count = e->index + 1;
    d9_segment *s = ix->cache[e->index];
    if (s) return s;
    s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return NULL;
    }
    s->rel = relative(ix, s->path);
    const char *slash = strrchr(s->path, '/');
    s->name = slash ? slash + 1 : s->path;
    s->number = segment_number(s->name);
    s->gzip_name = ends_with(s->name, ".gz");
    s->active = ends_with(s->name, ".active");
    s->mtime_ns = -1; /* matches no file: decoded at first sight */
    ix->cache[e->index] = s;
    return s;
}

/* The cached segment for path, open as fd (closed here), decoded when new or changed; NULL when
 * out of memory. */
static d9_segment *segment_for(d9_trace_index *ix, const char *path, int fd, const struct stat *st) {
    d9_segment *s = entry_for(ix, path);
    if (!s) {
        close(fd);
        return NULL;
    }
    if (s->remote || !unchanged(s, st)) {
        s->remote = false;
        remember(s, st);
        decode(ix, s, fd);
    } else {
        close(fd);
    }
    return s;
}

/* A selection's segment that is not in the cache: the listed size, nothing decoded. */
static d9_segment *remote_for(d9_trace_index *ix, const char *path, uint64_t size) {
    d9_segment *s = entry_for(ix, path);
    if (!s) return NULL;
    if (!s->remote) {
        s->remote = true;
        s->ino = s->dev = 0;
        s->mtime_ns = -1;
        s->status = D9_DEC_END;
        s->message[0] = '\0';
        s->events = s->clean_bytes = 0;
        s->have_ts = s->gzip = s->too_large = s->have_wall = false;
        s->service[0] = '\0';
        s->drops = s->dumps = 0;
    }
    s->size = size;
    return s;
}

/* The run of a listed path: its directory relative to the root, "." for the root. */
static char *run_name(const d9_trace_index *ix, const char *path) {
    size_t n = strlen(ix->root);
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) <= n) return strdup(".");
    return strndup(path + n + 1, (size_t)(slash - path) - n - 1);
}

static int cmp_run(const void *a, const void *b) {
    return strcmp(((const d9_run *)a)->name, ((const d9_run *)b)->name);
}

/* Append s to the run r (made when NULL) of ix: the run, or NULL when out of memory. */
static d9_run *add_to_run(d9_trace_index *ix, d9_run *r, char *name, const d9_sel_run *chosen, d9_segment *s) {
    if (!r) {
        d9_run *p = realloc(ix->runs, (ix->run_count + 1) * sizeof *p);
        if (!p) {
            free(name);
            return NULL;
        }
        ix->runs = p;
        r = &ix->runs[ix->run_count++];
        *r = (d9_run){.name = name, .selected = chosen};
    } else {
        free(name);
    }
    d9_segment **segs = realloc(r->segs, (r->count + 1) * sizeof *segs);
    if (!segs) return NULL;
    r->segs = segs;
    r->segs[r->count++] = s;
    return r;
}

static int by_segment_order(const void *a, const void *b) {
    const d9_segment *x = *(d9_segment *const *)a, *y = *(d9_segment *const *)b;
    if (x->number != y->number) return x->number < y->number ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A selection's runs and segments, in the cache or not (no walk of the root: the cache may
 * hold much else). */
static int refresh_selection(d9_trace_index *ix) {
    const d9_serve_selection *sel = ix->selection;
    for (size_t i = 0; i < sel->count; i++) {
        const d9_sel_run *sr = &sel->runs[i];
        d9_run *r = NULL;
        for (size_t k = 0; k < sr->count; k++) {
            char *path = NULL, *name = strdup(sr->name);
            bool root = !strcmp(sr->name, ".");
            if (!name || asprintf(&path, "%s%s%s/%s", ix->root, root ? "" : "/", root ? "" : sr->name,
                                  sr->segs[k].file) < 0) {
                free(name);
                return -1;
            }
            const char *rel = relative(ix, path);
            struct stat st;
            int fd = rel ? d9_open_regular_beneath(ix->root_fd, rel, &st) : -1;
            d9_segment *s;
            if (fd >= 0 && (uint64_t)st.st_size == sr->segs[k].size && holds_key(ix, rel, sr->segs[k].key)) {
                s = segment_for(ix, path, fd, &st);
            } else {
                if (fd >= 0) close(fd);
                s = remote_for(ix, path, sr->segs[k].size);
            }
            free(path);
            if (!s) {
                free(name);
                return -1;
            }
            s->seen = true;
            s->key = sr->segs[k].key;
            if (!(r = add_to_run(ix, r, name, sr, s))) return -1;
        }
        if (r && r->count > 1) qsort(r->segs, r->count, sizeof *r->segs, by_segment_order);
    }
    return 0;
}

int d9_trace_index_refresh(d9_trace_index *ix, char *err, size_t errlen) {
    if (ix->selection) {
        free_runs(ix);
        for (size_t i = 0; i < ix->cache_count; i++)
            if (ix->cache[i]) ix->cache[i]->seen = false;
        if (refresh_selection(ix) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0; /* in the selection's order: sorted by name */
    }
    d9_path_list paths = {0};
    char perr[600];
    char *arg = ix->root;
    if (d9_expand_paths(1, &arg, &paths, perr, sizeof perr) != 0 && strstr(perr, "out of memory")) {
        d9_path_list_free(&paths);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* otherwise an empty directory: no runs */
    free_runs(ix);
    for (size_t i = 0; i < ix->cache_count; i++)
        if (ix->cache[i]) ix->cache[i]->seen = false;
    int rc = 0;
    /* paths come grouped by directory, in segment order within one */
    for (size_t i = 0; i < paths.count && rc == 0; i++) {
        struct stat st;
        const char *rel = relative(ix, paths.paths[i]);
        int fd = rel ? d9_open_regular_beneath(ix->root_fd, rel, &st) : -1;
        if (fd < 0) continue; /* gone, not regular, or reached through a symlink */
        char *run = run_name(ix, paths.paths[i]);
        if (!run) {
            close(fd);
            rc = -1;
            break;
        }
        d9_segment *s = segment_for(ix, paths.paths[i], fd, &st);
        if (!s) {
            free(run);
            rc = -1;
            break;
        }
        s->seen = true;
        d9_run *r = ix->run_count ? &ix->runs[ix->run_count - 1] : NULL;
        if (!add_to_run(ix, r && !strcmp(r->name, run) ? r : NULL, run, NULL, s)) {
            rc = -1;
            break;
        }
    }
    d9_path_list_free(&paths);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (ix->run_count > 1) qsort(ix->runs, ix->run_count, sizeof *ix->runs, cmp_run);
    return 0;
}

const d9_run *d9_trace_index_run(const d9_trace_index *ix, const char *name) {
    for (size_t i = 0; i < ix->run_count; i++)
        if (!strcmp(ix->runs[i].name, name)) return &ix->runs[i];
    return NULL;
}

static const char *status_name(const d9_segment *s) {
    if (s->remote) return "remote";
    if (s->too_large) return "too_large";
    switch (s->status) {
    case D9_DEC_END: return "ok";
    case D9_DEC_TRUNCATED: return "truncated";
    default: return "error";
    }
}

static void json_url(d9_json *j, const char *run, const d9_segment *s) {
    char *url = d9_trace_url(run, s);
    if (url) d9_json_string(j, url);
    else d9_json_null(j);
    free(url);
}

void d9_trace_index_json(const d9_trace_index *ix, FILE *out) {
    d9_json j;
    d9_json_init(&j, out, true);
    d9_json_object_begin(&j);
    d9_json_key(&j, "root");
    d9_json_string(&j, ix->root);
    d9_json_key(&j, "runs");
    d9_json_array_begin(&j);
    for (size_t i = 0; i < ix->run_count; i++) {
        const d9_run *r = &ix->runs[i];
        uint64_t bytes = 0, events = 0, first = 0, last = 0, drops = 0, dumps = 0;
        int64_t start_wall = 0, modified_ns = -1;
        bool have = false, have_wall = false;
        const char *service = NULL;
        size_t cached = 0;
        for (size_t k = 0; k < r->count; k++) {
            const d9_segment *s = r->segs[k];
            bytes += s->size;
            cached += !s->remote;
            events += s->events;
            drops += s->drops;
            dumps += s->dumps;
            if (s->mtime_ns > modified_ns) modified_ns = s->mtime_ns;
            if (!service && s->service[0]) service = s->service;
            if (!s->have_ts) continue;
            if (s->have_wall && (!have_wall || (int64_t)s->first_ns + s->wall_minus_mono_ns < start_wall)) {
                start_wall = (int64_t)s->first_ns + s->wall_minus_mono_ns;
                have_wall = true;
            }
            if (!have || s->first_ns < first) first = s->first_ns;
            if (!have || s->last_ns > last) last = s->last_ns;
            have = true;
        }
        d9_json_object_begin(&j);
        d9_json_key(&j, "run");
        d9_json_string(&j, r->name);
        d9_json_key(&j, "service"); /* its SegmentMetadataEvent's, null when none says */
        if (service) d9_json_string(&j, service); else d9_json_null(&j);
        d9_json_key(&j, "start_epoch_ms"); /* its first event on the wall clock (ClockSyncEvent) */
        if (have_wall && start_wall > 0) d9_json_i64(&j, start_wall / 1000000); else d9_json_null(&j);
        d9_json_key(&j, "modified_epoch_s"); /* its last segment's mtime: newest first without a clock */
        if (modified_ns >= 0) d9_json_i64(&j, modified_ns / 1000000000); else d9_json_null(&j);
        d9_json_key(&j, "drops"); /* events the recorder lost (DroppedEventsEvent counts) */
        d9_json_u64(&j, drops);
        d9_json_key(&j, "dumps"); /* task dumps (TaskDumpEvent) */
        d9_json_u64(&j, dumps);
        d9_json_key(&j, "segments");
        d9_json_u64(&j, r->count);
        d9_json_key(&j, "bytes");
        d9_json_u64(&j, bytes);
        d9_json_key(&j, "cached_segments"); /* in the cache: with a selection, fetched when opened */
        d9_json_u64(&j, cached);
        d9_json_key(&j, "events");
        d9_json_u64(&j, events);
        d9_json_key(&j, "first_ns");
        if (have) d9_json_u64(&j, first); else d9_json_null(&j);
        d9_json_key(&j, "last_ns");
        if (have) d9_json_u64(&j, last); else d9_json_null(&j);
        /* wall clock, from the keys of a selection from S3 (no download needed) */
        d9_json_key(&j, "first_epoch_s");
        if (r->selected && r->selected->first >= 0) d9_json_i64(&j, r->selected->first); else d9_json_null(&j);
        d9_json_key(&j, "last_epoch_s");
        if (r->selected && r->selected->last >= 0) d9_json_i64(&j, r->selected->last); else d9_json_null(&j);
        d9_serve_dump_json(&j, ix->root_fd, r->name); /* a flight recorder dump: its trigger and window */
        d9_json_key(&j, "trace_url");
        json_url(&j, r->name, NULL);
        d9_json_key(&j, "viewer_url");
        char *v = d9_viewer_url(r->name, NULL);
        if (v) d9_json_string(&j, v); else d9_json_null(&j);
        free(v);
        d9_json_key(&j, "files");
        d9_json_array_begin(&j);
        for (size_t k = 0; k < r->count; k++) {
            const d9_segment *s = r->segs[k];
            d9_json_object_begin(&j);
            d9_json_key(&j, "name");
            d9_json_string(&j, s->name);
            d9_json_key(&j, "seg");
            if (s->number >= 0) d9_json_u64(&j, (uint64_t)s->number); else d9_json_null(&j);
            d9_json_key(&j, "size");
            d9_json_u64(&j, s->size);
            d9_json_key(&j, "cached");
            d9_json_bool(&j, !s->remote);
            d9_json_key(&j, "gzip");
            d9_json_bool(&j, s->gzip);
            d9_json_key(&j, "active");
            d9_json_bool(&j, s->active);
            d9_json_key(&j, "status");
            d9_json_string(&j, status_name(s));
            if (s->message[0]) {
                d9_json_key(&j, "message");
                d9_json_string(&j, s->message);
            }
            d9_json_key(&j, "events");
            d9_json_u64(&j, s->events);
            d9_json_key(&j, "first_ns");
            if (s->have_ts) d9_json_u64(&j, s->first_ns); else d9_json_null(&j);
            d9_json_key(&j, "last_ns");
            if (s->have_ts) d9_json_u64(&j, s->last_ns); else d9_json_null(&j);
            d9_json_key(&j, "drops");
            d9_json_u64(&j, s->drops);
            d9_json_key(&j, "dumps");
            d9_json_u64(&j, s->dumps);
            d9_json_key(&j, "decoded_bytes");
            d9_json_u64(&j, s->clean_bytes);
            d9_json_key(&j, "url");
            json_url(&j, r->name, s);
            d9_json_object_end(&j);
        }
        d9_json_array_end(&j);
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    d9_json_object_end(&j);
    fputc('\n', out);
}
