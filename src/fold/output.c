/* The fold's partitioned output (output.h). */
#include "fold/output.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct partition {
    d9f_table table;
    char *service;
    int64_t hour_index; /* wall_ns / 1 h */
    char *dir;
    char **existing;    /* part-*.parquet names already there (with a manifest) */
    size_t nexisting;
    char **held;        /* segment ids the existing files hold */
    size_t nheld;
    bool rewrite;       /* every held segment is in this fold's input: one file replaces all */
    char **segs;        /* segment ids with rows in the new file */
    size_t nsegs;
    FILE *f;
    pq_writer *w;
    d9f_hist_merge *hist; /* poll_hist: its rows, merged per key at the commit */
    char *tmp;          /* hidden temporary name of the new file */
} partition;

struct d9f_output {
    char *dir;
    char **ids;
    size_t nids;
    pq_options opt;
    partition *parts;
    size_t nparts;
    partition *last[D9F_TABLES]; /* the partition of the previous row, per table */
};

static bool has(char *const *v, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0) return true;
    return false;
}

static int push(char ***v, size_t *n, const char *s) {
    char **p = realloc(*v, (*n + 1) * sizeof *p);
    if (!p) return -1;
    *v = p;
    if (!(p[*n] = strdup(s))) return -1;
    (*n)++;
    return 0;
}

static void free_strs(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

void d9f_partition_date_hour(int64_t wall_ns, char date[11], char hour[3]) {
    time_t s = (time_t)(wall_ns >= 0 ? wall_ns / 1000000000 : 0);
    struct tm tm;
    gmtime_r(&s, &tm);
    unsigned y = (unsigned)(tm.tm_year + 1900) % 10000, m = (unsigned)(tm.tm_mon + 1) % 100,
             d = (unsigned)tm.tm_mday % 100, h = (unsigned)tm.tm_hour % 100;
    snprintf(date, 11, "%04u-%02u-%02u", y, m, d);
    snprintf(hour, 3, "%02u", h);
}

/* A Hive partition value: bytes outside [A-Za-z0-9._-] as %XX, as Hive escapes them. */
static void escape(const char *s, char *out, size_t len) {
    size_t o = 0;
    for (; *s && o + 4 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
            c == '_' || c == '-')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, len - o, "%%%02X", c);
    }
    out[o] = 0;
}

static int mkdirs(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

d9f_output *d9f_output_open(const char *dir, char *const *ids, size_t nids, const pq_options *opt,
                            char *err, size_t errlen) {
    d9f_output *o = calloc(1, sizeof *o);
    if (!o || !(o->dir = strdup(dir))) goto oom;
    for (size_t i = 0; i < nids; i++)
        if (ids[i] && push(&o->ids, &o->nids, ids[i]) != 0) goto oom; /* NULL: not folded */
    if (opt) o->opt = *opt;
    if (mkdirs(dir) != 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        d9f_output_abort(o);
        return NULL;
    }
    return o;
oom:
    snprintf(err, errlen, "out of memory");
    d9f_output_abort(o);
    return NULL;
}

/* The manifests in p->dir whose Parquet file is there: those files and the segments they
 * hold. A manifest without its file (a fold that stopped between the two renames) is
 * ignored. */
static int read_existing(partition *p) {
    DIR *d = opendir(p->dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 16 || strncmp(e->d_name, ".part-", 6) != 0 || strcmp(e->d_name + n - 9, ".segments") != 0)
            continue;
        char file[300], path[4096];
        snprintf(file, sizeof file, "%.*s.parquet", (int)(n - 10), e->d_name + 1);
        snprintf(path, sizeof path, "%s/%s", p->dir, file);
        if (access(path, F_OK) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", p->dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) {
            rc = -1;
            break;
        }
        char line[512];
        while (rc == 0 && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (line[0] && !has(p->held, p->nheld, line)) rc = push(&p->held, &p->nheld, line);
        }
        fclose(f);
        if (rc == 0) rc = push(&p->existing, &p->nexisting, file);
    }
    closedir(d);
    return rc;
}

static partition *find_partition(d9f_output *o, d9f_table table, const char *service, int64_t hour,
                                 char *err, size_t errlen) {
    for (size_t i = 0; i < o->nparts; i++) {
        partition *p = &o->parts[i];
        if (p->table == table && p->hour_index == hour && strcmp(p->service, service) == 0) return p;
    }
    partition *v = realloc(o->parts, (o->nparts + 1) * sizeof *v);
    if (!v) goto oom;
    o->parts = v;
    for (int t = 0; t < D9F_TABLES; t++) o->last[t] = NULL; /* they pointed into the old array */
    partition *p = &o->parts[o->nparts++];
    *p = (partition){.table = table, .hour_index = hour};
    char esc[600], date[11], hh[3], path[4096];
    escape(service, esc, sizeof esc);
    d9f_partition_date_hour(hour * 3600 * 1000000000ll, date, hh);
    snprintf(path, sizeof path, "%s/%s/service=%s/date=%s/hour=%s", o->dir, d9f_tables[table].name,
             esc, date, hh);
    if (!(p->service = strdup(service)) || !(p->dir = strdup(path))) goto oom;
    if (read_existing(p) != 0) {
        snprintf(err, errlen, "%s: cannot read its manifests: %s", p->dir, strerror(errno));
        return NULL;
    }
    p->rewrite = true;
    for (size_t i = 0; i < p->nheld; i++)
        if (!has(o->ids, o->nids, p->held[i])) p->rewrite = false;
    return p;
oom:
    snprintf(err, errlen, "out of memory");
    return NULL;
}

static uint64_t fnv(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ '\n') * 0x100000001b3ull;
}

pq_writer *d9f_output_rows(d9f_output *o, d9f_table table, const char *service, int64_t wall_ns,
                           const char *seg_id, bool *skip, char *err, size_t errlen) {
    *skip = false;
    int64_t hour = (wall_ns >= 0 ? wall_ns : 0) / (3600 * 1000000000ll);
    partition *p = o->last[table];
    if (!p || p->hour_index != hour || strcmp(p->service, service) != 0) {
        p = find_partition(o, table, service, hour, err, errlen);
        if (!p) return NULL;
        o->last[table] = p;
    }
    if (!p->rewrite && has(p->held, p->nheld, seg_id)) {
        *skip = true;
        return NULL;
    }
    if (p->nsegs == 0 || strcmp(p->segs[p->nsegs - 1], seg_id) != 0) {
        if (!has(p->segs, p->nsegs, seg_id) && push(&p->segs, &p->nsegs, seg_id) != 0) {
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
    }
    if (p->w) return p->w;
    if (mkdirs(p->dir) != 0) {
        snprintf(err, errlen, "%s: %s", p->dir, strerror(errno));
        return NULL;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/.tmp-fold-%ld-%zu.parquet", p->dir, (long)getpid(),
             (size_t)(p - o->parts));
    if (!(p->tmp = strdup(path))) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->f = fopen(path, "wb");
    if (!p->f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(p->tmp);
        p->tmp = NULL;
        return NULL;
    }
    const d9f_table_def *t = &d9f_tables[table];
    p->w = pq_writer_open(p->f, t->cols, t->ncols, &o->opt, err, errlen);
    if (p->w) pq_writer_add_kv(p->w, "dial9.table", t->name);
    return p->w;
}

static void release(d9f_output *o, bool failed);

d9f_hist_merge *d9f_output_hist(d9f_output *o, const char *service, int64_t wall_ns, const char *seg_id,
                                bool *skip, char *err, size_t errlen) {
    if (!d9f_output_rows(o, D9F_POLL_HIST, service, wall_ns, seg_id, skip, err, errlen)) return NULL;
    partition *p = o->last[D9F_POLL_HIST];
    if (!p->hist && !(p->hist = d9f_hist_merge_new())) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return p->hist;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int write_manifest(const partition *p, const char *name, char *err, size_t errlen) {
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/.tmp-fold-%ld.segments", p->dir, (long)getpid());
    snprintf(path, sizeof path, "%s/.%.*s.segments", p->dir, (int)(strlen(name) - 8), name);
    FILE *f = fopen(tmp, "w");
    if (!f) goto fail;
    for (size_t i = 0; i < p->nsegs; i++) fprintf(f, "%s\n", p->segs[i]);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        fclose(f);
        goto fail;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) goto fail;
    return 0;
fail:
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
}

/* The new file of p in place, replacing the old ones when p is rewritten. */
static int commit_partition(partition *p, FILE *log, size_t *written, size_t *unchanged, char *err,
                            size_t errlen) {
    qsort(p->segs, p->nsegs, sizeof *p->segs, cmp_str);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < p->nsegs; i++) h = fnv(h, p->segs[i]);
    char name[64], path[4200];
    snprintf(name, sizeof name, "part-%016" PRIx64 ".parquet", h);
    snprintf(path, sizeof path, "%s/%s", p->dir, name);
    if (has(p->existing, p->nexisting, name) && (!p->rewrite || p->nexisting == 1)) {
        /* the same segments, the same rows: already there as they would be written */
        unlink(p->tmp);
        (*unchanged)++;
        return 0;
    }
    if (write_manifest(p, name, err, errlen) != 0) return -1;
    if (rename(p->tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    free(p->tmp);
    p->tmp = NULL;
    (*written)++;
    if (log) fprintf(log, "dial9 fold: wrote %s\n", path);
    if (!p->rewrite) return 0;
    for (size_t i = 0; i < p->nexisting; i++) {
        if (strcmp(p->existing[i], name) == 0) continue;
        snprintf(path, sizeof path, "%s/%s", p->dir, p->existing[i]);
        unlink(path); /* the file first: a manifest without its file is ignored */
        snprintf(path, sizeof path, "%s/.%.*s.segments", p->dir, (int)(strlen(p->existing[i]) - 8),
                 p->existing[i]);
        unlink(path);
        if (log) fprintf(log, "dial9 fold: compacted %s/%s into %s\n", p->dir, p->existing[i], name);
    }
    return 0;
}

int d9f_output_commit(d9f_output *o, FILE *log, size_t *written, size_t *unchanged, uint64_t *rows,
                      char *err, size_t errlen) {
    *written = *unchanged = 0;
    *rows = 0;
    int rc = 0;
    /* every file complete first, then the renames: a failure to finish one renames none */
    for (size_t i = 0; i < o->nparts && rc == 0; i++) {
        partition *p = &o->parts[i];
        if (!p->w) continue;
        int merged = p->hist ? d9f_hist_merge_write(p->hist, p->w, err, errlen) : 0;
        *rows += pq_writer_rows(p->w);
        rc = pq_writer_close(p->w, err, errlen); /* says why, when the writer refused the merged rows */
        p->w = NULL;
        if (merged != 0) rc = -1;
        if (rc == 0 && (fflush(p->f) != 0 || fsync(fileno(p->f)) != 0)) {
            snprintf(err, errlen, "%s: %s", p->tmp, strerror(errno));
            rc = -1;
        }
    }
    for (size_t i = 0; i < o->nparts && rc == 0; i++) {
        partition *p = &o->parts[i];
        if (!p->f) continue;
        if (fclose(p->f) != 0) {
            snprintf(err, errlen, "%s: %s", p->tmp, strerror(errno));
            rc = -1;
        }
        p->f = NULL;
    }
    for (size_t i = 0; i < o->nparts && rc == 0; i++) {
        partition *p = &o->parts[i];
        if (!p->tmp) continue;
        rc = commit_partition(p, log, written, unchanged, err, errlen);
    }
    release(o, rc != 0);
    return rc;
}

/* A partition's directories this fold made and left empty, up to the table's: rmdir removes
 * only an empty one, so a directory holding another fold's files stays. */
static void remove_empty_dirs(const d9f_output *o, const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return;
    size_t root = strlen(o->dir);
    for (int level = 0; level < 4 && strlen(path) > root; level++) { /* hour=, date=, service=, TABLE */
        if (rmdir(path) != 0) return;
        char *slash = strrchr(path, '/');
        if (!slash) return;
        *slash = 0;
    }
}

static void release(d9f_output *o, bool failed) {
    if (!o) return;
    for (size_t i = 0; i < o->nparts; i++) {
        partition *p = &o->parts[i];
        if (p->w) pq_writer_abort(p->w);
        if (p->f) fclose(p->f);
        if (p->tmp) unlink(p->tmp);
        if (failed) remove_empty_dirs(o, p->dir);
        d9f_hist_merge_free(p->hist);
        free(p->tmp);
        free(p->service);
        free(p->dir);
        free_strs(p->existing, p->nexisting);
        free_strs(p->held, p->nheld);
        free_strs(p->segs, p->nsegs);
    }
    free(o->parts);
    free_strs(o->ids, o->nids);
    free(o->dir);
    free(o);
}

void d9f_output_abort(d9f_output *o) { release(o, true); }
