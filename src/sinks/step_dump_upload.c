/* A dump directory into S3 under dumps/ (step_dump_upload.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sinks/step_dump_upload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/segment_name.h"
#include "sinks/s3_key.h"

#define MANIFEST "manifest.json"

int d9_dump_key_dir(char *out, size_t outlen, const char *prefix, const char *service, const char *host,
                    time_t at, const char *dump_name) {
    char esc_service[800], esc_host[800], esc_name[600], date[16];
    if (d9_hive_escape(service, esc_service, sizeof esc_service) != 0 ||
        d9_hive_escape(host, esc_host, sizeof esc_host) != 0 || d9_hive_escape(dump_name, esc_name, sizeof esc_name) != 0)
        return -1;
    struct tm tm;
    gmtime_r(&at, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    size_t pl = prefix ? strlen(prefix) : 0;
    while (pl && prefix[pl - 1] == '/') pl--;
    int n = snprintf(out, outlen, "%.*s%s" D9_DUMPS_KEY_COMPONENT "/date=%s/service=%s/instance=%s/%s/", (int)pl,
                     pl ? prefix : "", pl ? "/" : "", date, esc_service, esc_host, esc_name);
    return n > 0 && (size_t)n < outlen ? 0 : -1;
}

const char *d9_dump_key_rest(const char *key, const char *prefix) {
    size_t pl = prefix ? strlen(prefix) : 0;
    while (pl && prefix[pl - 1] == '/') pl--;
    if (pl) {
        if (strncmp(key, prefix, pl) || key[pl] != '/') return NULL;
        key += pl + 1;
    }
    size_t cl = strlen(D9_DUMPS_KEY_COMPONENT);
    if (strncmp(key, D9_DUMPS_KEY_COMPONENT, cl) || key[cl] != '/') return NULL;
    return key + cl + 1;
}

bool d9_dump_key_is_dump(const char *key) {
    static const char mid[] = "/" D9_DUMPS_KEY_COMPONENT "/date=", start[] = D9_DUMPS_KEY_COMPONENT "/date=";
    return strstr(key, mid) != NULL || strncmp(key, start, sizeof start - 1) == 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One file, PUT whole (a dump's segment is at most a quarter of the memory budget, far below
 * a single PUT's limit), tried `attempts` times as the pace lets them go. */
static d9_s3_result put_file(d9_s3_client *c, int dir_fd, const char *name, const char *key_dir, unsigned attempts,
                             d9_upload_pace *pace, char *err, size_t errlen) {
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", name, strerror(errno));
        if (fd >= 0) close(fd);
        return D9_S3_REJECTED;
    }
    char key[4096];
    snprintf(key, sizeof key, "%s%s", key_dir, name);
    size_t nl = strlen(name);
    bool json = nl > 5 && !strcmp(name + nl - 5, ".json");
    const char *encoding = nl > 3 && !strcmp(name + nl - 3, ".gz") ? "gzip" : nl > 4 && !strcmp(name + nl - 4, ".zst") ? "zstd" : NULL;
    d9_sigv4_header h[2] = {{"content-type", json ? "application/json" : "application/octet-stream"}};
    size_t nh = 1;
    if (encoding) h[nh++] = (d9_sigv4_header){"content-encoding", encoding};
    d9_s3_result r = D9_S3_RETRY;
    for (unsigned a = 0; a < (attempts ? attempts : 1) && r == D9_S3_RETRY; a++) {
        if (!d9_upload_pace_wait(pace)) { /* given up, or S3 failing at exit (said) */
            if (!a) snprintf(err, errlen, "%s: not tried: %s", name, pace->quit ? "S3 is failing" : "out of time");
            break;
        }
        d9_s3_body body = {.fd = fd, .offset = 0, .length = (uint64_t)st.st_size};
        d9_s3_answer ans = D9_S3_ANSWER_INIT;
        r = d9_s3_request(c, "PUT", key, "", h, nh, &body, &ans, pace->give_up, pace->ctx, err, errlen);
        d9_s3_answer_free(&ans);
        if (r == D9_S3_OK && d9_upload_pace_success(pace))
            fprintf(stderr, "%s: S3 upload works again (%s%s stored)\n", pace->who, d9_s3_client_target(c), key);
        else if (r == D9_S3_RETRY && !d9_upload_pace_given_up(pace))
            (void)d9_upload_pace_failure(pace, err);
    }
    close(fd);
    return r;
}

d9_s3_result d9_dump_upload(d9_s3_client *c, const char *dir, const char *key_dir, unsigned attempts,
                            d9_upload_pace *pace, char *err, size_t errlen) {
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return D9_S3_REJECTED;
    }
    struct stat st;
    if (fstatat(dir_fd, MANIFEST, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(err, errlen, "%s: no %s (an incomplete dump is not uploaded)", dir, MANIFEST);
        close(dir_fd);
        return D9_S3_REJECTED;
    }
    int dup_fd = dup(dir_fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        if (dup_fd >= 0) close(dup_fd);
        close(dir_fd);
        return D9_S3_REJECTED;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    d9_s3_result r = D9_S3_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        uint64_t seq;
        d9_segment_kind kind;
        if (!d9_segment_name_parse(e->d_name, &seq, &kind) || kind == D9_SEGMENT_ACTIVE) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n && r == D9_S3_OK; i++)
        r = put_file(c, dir_fd, names[i], key_dir, attempts, pace, err, errlen);
    /* last: its object is what says the dump is whole */
    if (r == D9_S3_OK) r = put_file(c, dir_fd, MANIFEST, key_dir, attempts, pace, err, errlen);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    close(dir_fd);
    return r;
}
