/* The fold's output in S3, published by a commit marker (s3_publish.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fold/s3_publish.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aws/s3_client.h"
#include "fleet/s3_fetch.h"
#include "fleet/s3_list.h"

#define ATTEMPTS 4

typedef struct strs {
    char **v;
    size_t n;
} strs;

static int push(strs *s, const char *x) {
    char **v = realloc(s->v, (s->n + 1) * sizeof *v);
    if (!v) return -1;
    s->v = v;
    if (!(v[s->n] = strdup(x))) return -1;
    s->n++;
    return 0;
}
static void strs_free(strs *s) {
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    *s = (strs){0};
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static bool sorted_has(const strs *s, const char *x) {
    return s->n && bsearch(&x, s->v, s->n, sizeof *s->v, cmp_str) != NULL;
}

static const char *base_name(const char *rel) {
    const char *s = strrchr(rel, '/');
    return s ? s + 1 : rel;
}
static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}
static bool is_table_file(const char *rel) {
    return strncmp(base_name(rel), "part-", 5) == 0 && ends_with(rel, ".parquet");
}
static bool is_manifest(const char *rel) {
    return strncmp(base_name(rel), ".part-", 6) == 0 && ends_with(rel, ".segments");
}

static int mkdirs_for(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

/* One request, retried while S3 says "try again" (throttling, 5xx, a dropped connection). */
static d9_s3_result request(d9_s3_client *c, const char *method, const char *key, const d9_s3_body *body,
                            d9_s3_answer *ans, char *err, size_t errlen) {
    d9_s3_result r = D9_S3_RETRY;
    for (int attempt = 0; attempt < ATTEMPTS && r == D9_S3_RETRY; attempt++) {
        if (attempt) sleep(1u << (attempt - 1));
        d9_s3_answer_free(ans);
        ans->status = 0;
        r = d9_s3_request(c, method, key, "", NULL, 0, body, ans, NULL, NULL, err, errlen);
    }
    return r;
}

static int put_file(d9_s3_client *c, const char *key, const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    d9_s3_body body = {.fd = fd, .offset = 0, .length = (uint64_t)st.st_size};
    d9_s3_answer ans = D9_S3_ANSWER_INIT;
    d9_s3_result r = request(c, "PUT", key, &body, &ans, err, errlen);
    d9_s3_answer_free(&ans);
    close(fd);
    return r == D9_S3_OK ? 0 : -1;
}

/* GET key into path (small objects: manifests), or into *text when path is NULL. */
static int get_object(d9_s3_client *c, const char *key, const char *path, char **text, char *err, size_t errlen) {
    d9_s3_answer ans = D9_S3_ANSWER_INIT;
    d9_s3_result r = request(c, "GET", key, NULL, &ans, err, errlen);
    if (r != D9_S3_OK) {
        d9_s3_answer_free(&ans);
        return -1;
    }
    int rc = 0;
    if (path) {
        FILE *f = mkdirs_for(path) == 0 ? fopen(path, "wb") : NULL;
        if (!f || fwrite(ans.body ? ans.body : "", 1, ans.body_len, f) != ans.body_len) rc = -1;
        if (f && fclose(f) != 0) rc = -1;
        if (rc) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        d9_s3_answer_free(&ans);
    } else {
        *text = ans.body ? ans.body : strdup("");
    }
    return rc;
}

static char *staging_root; /* for the nftw callbacks */
static strs *walk_out;
static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    if (type == FTW_F) return push(walk_out, path + strlen(staging_root) + 1) != 0;
    return 0;
}
static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    (void)(type == FTW_DP ? rmdir(path) : unlink(path));
    return 0;
}

/* The manifest's name of a table file: dir/.part-H.segments for dir/part-H.parquet. */
static void manifest_of(const char *rel, char *out, size_t len) {
    const char *b = base_name(rel);
    snprintf(out, len, "%.*s.%.*s.segments", (int)(b - rel), rel, (int)(strlen(b) - 8), b);
}

/* The marker: every Parquet file of the tables that has its manifest (a file uploaded by a
 * fold that stopped before its manifest is no part of the tables), sorted. */
static char *marker_text(const strs *local) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fputs("{\"format\":\"dial9-fold-commit 1\",\"files\":[", f);
    bool first = true;
    for (size_t i = 0; i < local->n; i++) {
        char m[4200];
        if (!is_table_file(local->v[i])) continue;
        manifest_of(local->v[i], m, sizeof m);
        if (!sorted_has(local, m)) continue;
        fprintf(f, "%s\n\"%s\"", first ? "" : ",", local->v[i]); /* names: Hive-escaped, no quote */
        first = false;
    }
    fputs("\n]}\n", f);
    return fclose(f) == 0 ? buf : (free(buf), NULL);
}

int d9f_fold_to_s3(char *const *paths, size_t n, const char *url, bool commit, const pq_options *opt, FILE *log,
                   FILE *info, d9f_result *res, d9f_s3_result *s3res, char *err, size_t errlen) {
    *s3res = (d9f_s3_result){0};
    char bucket[128], prefix[1024];
    if (d9_s3_split_url(url, bucket, sizeof bucket, prefix, sizeof prefix, err, errlen) != 0) return -1;
    if (!prefix[0]) {
        snprintf(err, errlen, "%s: give a prefix for the tables (s3://BUCKET/PREFIX)", url);
        return -1;
    }
    d9_s3_client *c = d9_s3_client_for(url, bucket, err, errlen);
    if (!c) return -1;
    const char *tmp = getenv("TMPDIR");
    char root[4096];
    snprintf(root, sizeof root, "%s/dial9-fold-s3-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        snprintf(err, errlen, "%s: %s", root, strerror(errno));
        d9_s3_client_free(c);
        return -1;
    }
    staging_root = root;
    size_t pl = strlen(prefix) + 1; /* "prefix/" */
    char list_prefix[1100], key[8192], path[8192];
    snprintf(list_prefix, sizeof list_prefix, "%s/", prefix);
    d9_s3_key_list keys = {0};
    strs remote = {0}, local = {0};
    char *old_marker = NULL, *new_marker = NULL;
    int rc = commit ? d9_s3_list_keys(c, list_prefix, &keys, err, errlen) : 0;
    /* 1. what the prefix holds, stood for in the staging directory */
    for (size_t i = 0; rc == 0 && i < keys.count; i++) {
        const char *rel = keys.keys[i] + pl;
        if (strcmp(rel, D9F_S3_MARKER) == 0) {
            rc = get_object(c, keys.keys[i], NULL, &old_marker, err, errlen);
            continue;
        }
        if (!is_table_file(rel) && !is_manifest(rel)) continue; /* not the fold's: left alone */
        if (push(&remote, rel) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        snprintf(path, sizeof path, "%s/%s", root, rel);
        if (is_manifest(rel)) {
            rc = get_object(c, keys.keys[i], path, NULL, err, errlen);
        } else {
            FILE *f = mkdirs_for(path) == 0 ? fopen(path, "wb") : NULL; /* a placeholder */
            if (!f || fclose(f) != 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                rc = -1;
            }
        }
    }
    if (remote.n) qsort(remote.v, remote.n, sizeof *remote.v, cmp_str);
    /* 2. the fold, as locally */
    if (rc == 0) rc = d9f_fold(paths, n, root, opt, log, NULL, res, err, errlen);
    if (rc == 0) {
        walk_out = &local;
        if (nftw(root, walk_one, 16, FTW_PHYS) != 0) {
            snprintf(err, errlen, "%s: cannot walk the staged tables", root);
            rc = -1;
        }
        if (local.n) qsort(local.v, local.n, sizeof *local.v, cmp_str);
    }
    /* 3. what the fold added: Parquet files first, then their manifests */
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        for (size_t i = 0; rc == 0 && i < local.n; i++) {
            const char *rel = local.v[i];
            if (sorted_has(&remote, rel) || (pass == 0 ? !is_table_file(rel) : !is_manifest(rel))) continue;
            snprintf(key, sizeof key, "%s/%s", prefix, rel);
            snprintf(path, sizeof path, "%s/%s", root, rel);
            rc = put_file(c, key, path, err, errlen);
            if (rc == 0) {
                s3res->uploaded++;
                if (info) fprintf(info, "dial9 fold: wrote s3://%s/%s\n", bucket, key);
            }
        }
    }
    /* 4. the commit: one object, last */
    if (!commit) goto done;
    if (rc == 0 && !(new_marker = marker_text(&local))) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    if (rc == 0 && (!old_marker || strcmp(old_marker, new_marker) != 0)) {
        snprintf(key, sizeof key, "%s/%s", prefix, D9F_S3_MARKER);
        d9_s3_body body = {.fd = -1, .mem = new_marker, .length = strlen(new_marker)};
        d9_s3_answer ans = D9_S3_ANSWER_INIT;
        rc = request(c, "PUT", key, &body, &ans, err, errlen) == D9_S3_OK ? 0 : -1;
        d9_s3_answer_free(&ans);
        if (rc == 0) {
            s3res->marker_written = 1;
            if (info) fprintf(info, "dial9 fold: committed s3://%s/%s\n", bucket, key);
        }
    }
    /* 5. what the marker no longer names: compacted away (a failure here leaves garbage only) */
    for (size_t i = 0; rc == 0 && i < remote.n; i++) {
        if (sorted_has(&local, remote.v[i])) continue;
        snprintf(key, sizeof key, "%s/%s", prefix, remote.v[i]);
        d9_s3_answer ans = D9_S3_ANSWER_INIT;
        char derr[512];
        if (request(c, "DELETE", key, NULL, &ans, derr, sizeof derr) == D9_S3_OK) {
            s3res->deleted++;
            if (info && is_table_file(remote.v[i])) fprintf(info, "dial9 fold: compacted s3://%s/%s\n", bucket, key);
        } else if (log) {
            fprintf(log, "dial9 fold: warning: %s (no longer in the tables: left as garbage)\n", derr);
        }
        d9_s3_answer_free(&ans);
    }
done:
    nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(old_marker);
    free(new_marker);
    strs_free(&remote);
    strs_free(&local);
    d9_s3_key_list_free(&keys);
    d9_s3_client_free(c);
    return rc;
}
