/* `dial9 dumps LOCATION...`: the flight recorder's dumps in a directory or under an S3
 * prefix's dumps/ (sinks/step_dump_upload.h), each with its trigger and window, or said
 * INCOMPLETE when it has no manifest (docs/flight-recorder.md). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fleet/s3_fetch.h"
#include "fleet/s3_list.h"
#include "common/dump_summary.h"
#include "common/exit_codes.h"
#include "aws/s3_client.h"
#include "sinks/step_dump_upload.h"

static void dumps_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 dumps LOCATION...\n"
            "\n"
            "List the flight recorder's dumps (docs/flight-recorder.md) with their trigger and window.\n"
            "LOCATION: a dump directory, a directory of dumps (DIAL9_DUMP_DIR), or s3://BUCKET[/PREFIX]\n"
            "(default prefix dial9-traces), whose dumps/ the recorder uploads to. A dump without its\n"
            "manifest (interrupted, or its upload cut short) is listed as INCOMPLETE.\n"
            "\n"
            "  -h, --help\n"
            "\n"
            "Exit status: 0 listed (incomplete dumps included), 1 a location could not be read,\n"
            "2 usage error.\n");
}

static void print_state(const char *name, d9_dump_state st, const d9_dump_summary *s) {
    char line[1024];
    switch (st) {
    case D9_DUMP_COMPLETE:
        d9_dump_summary_line(s, line, sizeof line);
        printf("%s\tcomplete\t%s\n", name, line);
        break;
    case D9_DUMP_INCOMPLETE:
        printf("%s\tINCOMPLETE\tno %s: the dump was interrupted, its segments are all there is\n", name,
               D9_DUMP_MANIFEST_FILE);
        break;
    default:
        printf("%s\tUNREADABLE\tits %s is not a dump manifest\n", name, D9_DUMP_MANIFEST_FILE);
        break;
    }
}

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A dump directory, or a directory whose entries are dumps. */
static int list_local(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        fprintf(stderr, "dial9 dumps: %s: %s%s\n", path, strerror(e),
                e == ENOENT ? " (no dump was written there yet: a recorder makes the directory at its first dump)" : "");
        return 1;
    }
    d9_dump_summary s;
    d9_dump_state st = d9_dump_dir_read(fd, &s);
    if (st != D9_DUMP_NOT_A_DUMP) {
        print_state(path, st, &s);
        close(fd);
        return 0;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        d9_dump_summary tmp;
        bool is_dump = d9_dump_dir_read(sub, &tmp) != D9_DUMP_NOT_A_DUMP;
        close(sub);
        if (!is_dump) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    if (n) qsort(names, n, sizeof *names, by_str);
    for (size_t i = 0; i < n; i++) {
        int sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
            char full[8192];
            snprintf(full, sizeof full, "%s/%s", path, names[i]);
            st = d9_dump_dir_read(sub, &s);
            print_state(full, st, &s);
            close(sub);
        }
        free(names[i]);
    }
    free(names);
    closedir(d);
    if (!n) fprintf(stderr, "dial9 dumps: %s: no dump there\n", path);
    return 0;
}

typedef struct dump_key {
    char *dir;          /* the key up to and including the last '/' */
    bool has_manifest;
} dump_key;

typedef struct dump_keys {
    const char *prefix; /* the traces' prefix the dumps/ keys are under */
    dump_key *v;
    size_t n, cap;
} dump_keys;

static int by_dir(const void *a, const void *b) { return strcmp(((const dump_key *)a)->dir, ((const dump_key *)b)->dir); }

/* One listed key: its dump directory (a new one, or one seen), and whether it is the manifest. */
static int add_dump_key(void *ctx, const char *key, uint64_t size, const char *last_modified, char *err,
                        size_t errlen) {
    (void)size, (void)last_modified;
    dump_keys *d = ctx;
    const char *rest = d9_dump_key_rest(key, d->prefix);
    const char *slash = strrchr(key, '/');
    if (!rest || !slash) return 0;
    size_t dl = (size_t)(slash - key) + 1, i = 0;
    for (; i < d->n && (strlen(d->v[i].dir) != dl || strncmp(d->v[i].dir, key, dl)); i++) {}
    if (i == d->n) {
        if (d->n == d->cap) {
            size_t cap = d->cap ? d->cap * 2 : 16;
            dump_key *nv = realloc(d->v, cap * sizeof *nv);
            if (!nv) goto oom;
            d->v = nv;
            d->cap = cap;
        }
        d->v[d->n] = (dump_key){.dir = strndup(key, dl)};
        if (!d->v[d->n].dir) goto oom;
        d->n++;
    }
    d->v[i].has_manifest |= !strcmp(slash + 1, D9_DUMP_MANIFEST_FILE);
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* Every key under {prefix}/dumps/, grouped by dump directory. */
static int list_s3(const char *url) {
    char bucket[256], prefix[1024], err[1024];
    if (d9_s3_split_url(url, bucket, sizeof bucket, prefix, sizeof prefix, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 dumps: %s\n", err);
        return 1;
    }
    if (!prefix[0]) snprintf(prefix, sizeof prefix, "dial9-traces");
    d9_s3_client *c = d9_s3_client_for(url, bucket, err, sizeof err);
    if (!c) {
        fprintf(stderr, "dial9 dumps: %s\n", err);
        return 1;
    }
    char list_prefix[1200];
    snprintf(list_prefix, sizeof list_prefix, "%s/" D9_DUMPS_KEY_COMPONENT "/", prefix);
    dump_keys keys = {.prefix = prefix};
    int rc = 0;
    if (d9_s3_list_each(c, list_prefix, add_dump_key, &keys, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 dumps: %s\n", err);
        rc = 1;
    }
    dump_key *v = keys.v;
    size_t n = keys.n;
    if (n) qsort(v, n, sizeof *v, by_dir);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char name[4096];
        snprintf(name, sizeof name, "s3://%s/%.*s", bucket, (int)strlen(v[i].dir) - 1, v[i].dir);
        d9_dump_summary s;
        d9_dump_state st = D9_DUMP_INCOMPLETE;
        if (v[i].has_manifest) {
            char key[4200];
            snprintf(key, sizeof key, "%s%s", v[i].dir, D9_DUMP_MANIFEST_FILE);
            d9_s3_answer ans = D9_S3_ANSWER_INIT;
            if (d9_s3_request(c, "GET", key, "", NULL, 0, NULL, &ans, NULL, NULL, err, sizeof err) != D9_S3_OK) {
                fprintf(stderr, "dial9 dumps: %s\n", err);
                rc = 1;
            }
            st = rc ? D9_DUMP_UNREADABLE : ans.body && d9_dump_summary_parse(ans.body, ans.body_len, &s)
                                               ? D9_DUMP_COMPLETE : D9_DUMP_UNREADABLE;
            d9_s3_answer_free(&ans);
        }
        if (rc == 0) print_state(name, st, &s);
    }
    if (rc == 0 && !n) fprintf(stderr, "dial9 dumps: %s: no dump under %s\n", url, list_prefix);
    for (size_t i = 0; i < n; i++) free(v[i].dir);
    free(v);
    d9_s3_client_free(c);
    return rc;
}

int d9_cmd_dumps(int argc, char **argv) {
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
    optind = 1;
    int o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (o == 'h') {
            dumps_usage(stdout);
            return D9_EXIT_OK;
        }
        dumps_usage(stderr);
        return D9_EXIT_USAGE;
    }
    if (optind >= argc) {
        dumps_usage(stderr);
        return D9_EXIT_USAGE;
    }
    int rc = 0;
    for (int i = optind; i < argc; i++) rc |= d9_s3_is_url(argv[i]) ? list_s3(argv[i]) : list_local(argv[i]);
    return rc ? D9_EXIT_DATA : D9_EXIT_OK;
}
