#include "core/run_metadata.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/host_boot_id.h"
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
            if (strcmp(m->vals[i], val) != 0) m->version++;
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
    m->version++;
}

const char *d9_program_name(void) {
    return program_invocation_short_name && *program_invocation_short_name
               ? program_invocation_short_name
               : "unknown";
}

/* UTC calendar fields of a time, computed here: glibc's gmtime_r and strftime read the time
 * zone file (/etc/localtime) on first use, for nothing, at every start of every program. */
typedef struct utc {
    int year, month, day, hour, min, sec;
} utc;

static utc utc_of(time_t t) {
    int64_t days = (int64_t)t / 86400, secs = (int64_t)t % 86400;
    if (secs < 0) {
        secs += 86400;
        days--;
    }
    /* days since 1970-01-01 to a proleptic Gregorian date, in 400-year eras from 0000-03-01 */
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;                                    /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                /* [0, 365], from March */
    int64_t mp = (5 * doy + 2) / 153;                                     /* [0, 11], March = 0 */
    utc u;
    u.day = (int)(doy - (153 * mp + 2) / 5 + 1);
    u.month = (int)(mp < 10 ? mp + 3 : mp - 9);
    u.year = (int)(yoe + era * 400 + (u.month <= 2));
    u.hour = (int)(secs / 3600);
    u.min = (int)(secs / 60 % 60);
    u.sec = (int)(secs % 60);
    return u;
}

const char *d9_run_metadata_get(const d9_run_metadata *m, const char *key) {
    for (int i = 0; i < m->count; i++)
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    return NULL;
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
    d9_host_boot_id(buf, sizeof buf);
    if (buf[0]) d9_run_metadata_set(m, "boot_id", "%s", buf);
    d9_run_metadata_set(m, "library", "dial9-c %s", D9_VERSION);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        d9_run_metadata_set(m, "program", "%s", buf);
    }
    utc u = utc_of(time(NULL));
    d9_run_metadata_set(m, "start_time", "%04d-%02d-%02dT%02d:%02d:%02dZ", u.year, u.month, u.day,
                        u.hour, u.min, u.sec);
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
    utc u = utc_of(time(NULL));
    char when[80];
    snprintf(when, sizeof when, "%04d%02d%02dT%02d%02d%02dZ", u.year, u.month, u.day, u.hour, u.min, u.sec);
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rnd = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() * 2654435761u;
    }
    snprintf(out, len, "%s-%d-%08x", when, (int)getpid(), rnd);
}
