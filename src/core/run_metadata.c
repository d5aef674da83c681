#include "core/run_metadata.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/workers.h"

void d9_run_metadata_set(d9_run_metadata *m, const char *key, const char *fmt, ...) {
    char *val = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&val, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    for (int i = 0; i < m->count; i++) {
        if (strcmp(m->keys[i], key) == 0) {
            free(m->vals[i]);
            m->vals[i] = val;
            return;
        }
    }
    char *k = strdup(key);
    if (!k || m->count == D9_META_MAX) {
        free(k);
        free(val);
        return;
    }
    m->keys[m->count] = k;
    m->vals[m->count++] = val;
}

static void read_line(const char *path, char *out, size_t len) {
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(out, (int)len, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

const char *d9_program_name(void) {
    return program_invocation_short_name && *program_invocation_short_name
               ? program_invocation_short_name
               : "unknown";
}

void d9_run_metadata_describe_process(d9_run_metadata *m, const char *service, const char *run_id) {
    char buf[4096];
    d9_run_metadata_set(m, "service", "%s", service);
    if (gethostname(buf, sizeof buf) == 0) {
        buf[sizeof buf - 1] = 0;
        d9_run_metadata_set(m, "host", "%s", buf);
    }
    d9_run_metadata_set(m, "pid", "%d", (int)getpid());
    d9_run_metadata_set(m, "run_id", "%s", run_id);
    read_line("/proc/sys/kernel/random/boot_id", buf, sizeof buf);
    if (buf[0]) d9_run_metadata_set(m, "boot_id", "%s", buf);
    d9_run_metadata_set(m, "library", "dial9-c %s", D9_VERSION);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        d9_run_metadata_set(m, "program", "%s", buf);
    }
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        d9_run_metadata_set(m, "start_time", "%s", buf);
}

static void add_runtime(const char *runtime, const char *ids, void *ctx) {
    void **args = ctx;
    char key[300];
    snprintf(key, sizeof key, "runtime.%s", runtime);
    d9_enc_string_map_entry(args[0], args[1], key, ids);
}

void d9_run_metadata_encode(const d9_run_metadata *m, d9_buf *b, d9_pool_frame *map) {
    for (int i = 0; i < m->count; i++) d9_enc_string_map_entry(b, map, m->keys[i], m->vals[i]);
    void *args[2] = {b, map};
    d9_workers_each_runtime(add_runtime, args);
}

void d9_run_metadata_free(d9_run_metadata *m) {
    for (int i = 0; i < m->count; i++) {
        free(m->keys[i]);
        free(m->vals[i]);
    }
    m->count = 0;
}

void d9_make_run_id(char *out, size_t len) {
    time_t now = time(NULL);
    struct tm tm;
    char when[32] = "00000000T000000Z";
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rnd = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() * 2654435761u;
    }
    snprintf(out, len, "%s-%d-%08x", when, (int)getpid(), rnd);
}
