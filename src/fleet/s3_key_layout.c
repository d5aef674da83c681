/* dial9's key layouts, current and historical (see s3_key_layout.h). */
#include "fleet/s3_key_layout.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "sinks/s3_key.h"

#define MAX_PARTS 64

typedef struct span { const char *p; size_t n; } span;

/* The last MAX_PARTS components of the key: every layout is read from the components nearest
 * the file, and a deeper prefix (S3 allows 1 024 bytes) must not push the file name out. */
static size_t split(const char *key, span *parts) {
    const char *p = key + strlen(key);
    size_t count = 0;
    for (const char *end = p; count < MAX_PARTS; end = p - 1) {
        p = end;
        while (p > key && p[-1] != '/') p--;
        parts[count++] = (span){p, (size_t)(end - p)};
        if (p == key) break;
    }
    for (size_t i = 0; i < count / 2; i++) { /* nearest the file last, as in the key */
        span t = parts[i];
        parts[i] = parts[count - 1 - i];
        parts[count - 1 - i] = t;
    }
    return count;
}

static bool digits(span s, size_t n) {
    if (s.n != n) return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s.p[i])) return false;
    return true;
}

static bool is_date(span s) { /* YYYY-MM-DD */
    return s.n == 10 && digits((span){s.p, 4}, 4) && s.p[4] == '-' && digits((span){s.p + 5, 2}, 2) &&
           s.p[7] == '-' && digits((span){s.p + 8, 2}, 2);
}

/* the value of a Hive component name=value, copied as it is (escaped already) */
static bool hive_value(const span *parts, size_t count, const char *name, char *out, size_t len) {
    size_t nl = strlen(name);
    for (size_t i = 0; i + 1 < count; i++)
        if (parts[i].n > nl + 1 && !strncmp(parts[i].p, name, nl) && parts[i].p[nl] == '=') {
            size_t vl = parts[i].n - nl - 1;
            if (vl >= len) return false;
            memcpy(out, parts[i].p + nl + 1, vl);
            out[vl] = 0;
            return true;
        }
    return false;
}

static bool escaped(span s, char *out, size_t len) {
    char raw[768];
    if (s.n == 0 || s.n >= sizeof raw) return false;
    memcpy(raw, s.p, s.n);
    raw[s.n] = 0;
    return d9_hive_escape(raw, out, len) == 0;
}

bool d9_key_parse(const char *key, d9_key_parts *out) {
    memset(out, 0, sizeof *out);
    out->start = out->index = -1;
    span parts[MAX_PARTS];
    size_t count = split(key, parts);
    span base = parts[count - 1];
    bool gz = base.n > 7 && !memcmp(base.p + base.n - 7, ".bin.gz", 7);
    bool zst = base.n > 8 && !memcmp(base.p + base.n - 8, ".bin.zst", 8);
    if (!gz && !zst && !(base.n > 4 && !memcmp(base.p + base.n - 4, ".bin", 4))) return false;
    long long epoch, index;
    int used = 0;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)base.n, base.p);
    if (sscanf(name, "%lld-%lld%n", &epoch, &index, &used) == 2 && name[used] == '.' && epoch >= 0 && index >= 0) {
        out->start = epoch;
        out->index = index;
    }
    if (out->index < 0) return true; /* OTHER: no segment number to order a run by */
    if (hive_value(parts, count, "service", out->service, sizeof out->service) &&
        hive_value(parts, count, "instance", out->instance, sizeof out->instance) &&
        hive_value(parts, count, "boot", out->boot, sizeof out->boot)) {
        out->layout = D9_KEY_HIVE;
        return true;
    }
    size_t date = count;
    for (size_t i = count - 1; i-- > 0;)
        if (is_date(parts[i])) {
            date = i;
            break;
        }
    if (date == count) return true;
    size_t below = count - 1 - date; /* HHMM, service, instance[, boot], then the file */
    if ((below != 4 && below != 5) || !digits(parts[date + 1], 4)) return true;
    if (!escaped(parts[date + 2], out->service, sizeof out->service) ||
        !escaped(parts[date + 3], out->instance, sizeof out->instance) ||
        (below == 5 && !escaped(parts[date + 4], out->boot, sizeof out->boot))) {
        out->service[0] = out->instance[0] = out->boot[0] = 0;
        return true;
    }
    out->layout = below == 5 ? D9_KEY_DATED_BOOT : D9_KEY_DATED;
    return true;
}
