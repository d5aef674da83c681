#include "sinks/s3_key.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* what Hive's FileUtils.escapePathName escapes besides control characters */
#define HIVE_SPECIAL "\"#%'*/:=?\\{[]^"

static bool hive_special(unsigned char c) {
    return c < 0x20 || c == 0x7f || strchr(HIVE_SPECIAL, c) != NULL;
}

int d9_hive_escape(const char *in, char *out, size_t outlen) {
    static const char digits[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        bool esc = hive_special(*p);
        if (o + (esc ? 3 : 1) >= outlen) return -1;
        if (esc) {
            out[o++] = '%';
            out[o++] = digits[*p >> 4];
            out[o++] = digits[*p & 15];
        } else {
            out[o++] = (char)*p;
        }
    }
    if (o >= outlen) return -1;
    out[o] = 0;
    return 0;
}

int d9_s3_key(char *out, size_t outlen, const char *prefix, const char *service, const char *host,
              const char *boot_id, time_t start, uint64_t index, const char *suffix) {
    char svc[3 * 256], inst[3 * 256], boot[3 * 256];
    if (d9_hive_escape(service && *service ? service : "unknown", svc, sizeof svc) ||
        d9_hive_escape(host && *host ? host : "unknown", inst, sizeof inst) ||
        d9_hive_escape(boot_id && *boot_id ? boot_id : "unknown", boot, sizeof boot))
        return -1;
    struct tm tm;
    gmtime_r(&start, &tm);
    size_t plen = prefix ? strlen(prefix) : 0;
    while (plen && prefix[plen - 1] == '/') plen--;
    int n = snprintf(out, outlen,
                     "%.*s%sversion=1/date=%04d-%02d-%02d/service=%s/time=%02d%02d/instance=%s/boot=%s/"
                     "%lld-%" PRIu64 "%s",
                     (int)plen, plen ? prefix : "", plen ? "/" : "", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     svc, tm.tm_hour, tm.tm_min, inst, boot, (long long)start, index, suffix);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}
