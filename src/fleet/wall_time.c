/* Wall-clock times (wall_time.h). */
#include "fleet/wall_time.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "15m" into seconds: a non-negative number and one unit of s, m, h, d. */
static int parse_ago(const char *s, double *secs) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* digits and a '.' only: strtod would also take signs, spaces, exponents, hex, inf and nan */
    if (errno || end == s || v < 0 || strspn(s, "0123456789.") != (size_t)(end - s)) return -1;
    double unit = !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : !strcmp(end, "d") ? 86400 : 0;
    if (unit == 0 || v * unit > 1e11) return -1;
    *secs = v * unit;
    return 0;
}

/* Whether s has digits where `shape` has '9' and the same character elsewhere, for its length
 * (sscanf's %d alone would take "+026", " 26" or "-1" for a field). */
static bool shaped(const char *s, const char *shape) {
    for (; *shape; s++, shape++)
        if (*shape == '9' ? !isdigit((unsigned char)*s) : *s != *shape) return false;
    return true;
}

static int parse_utc(const char *s, time_t *out) {
    struct tm tm = {0};
    int n = 0, len = (int)strlen(s);
    if (!shaped(s, "9999-99-99")) return -1;
    if (len > 10 && !shaped(s + 11, "99:99")) return -1;
    if (len > 16 && s[16] == ':' && !shaped(s + 17, "99")) return -1;
    if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3 || n != 10) return -1;
    if (n < len) {
        int m = 0;
        if (s[n] != 'T' && s[n] != ' ') return -1;
        if (sscanf(s + n + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &m) != 2 || m != 5) return -1;
        n += 1 + m;
        if (s[n] == ':') {
            if (sscanf(s + n + 1, "%2d%n", &tm.tm_sec, &m) != 1 || m != 2) return -1;
            n += 3;
        }
        if (s[n] == 'Z') n++;
        if (n != len) return -1;
    }
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = timegm(&tm);
    return 0;
}

int d9_wall_time_parse(const char *s, time_t now, time_t *out) {
    if (!strcmp(s, "now")) {
        *out = now;
        return 0;
    }
    if (!strncmp(s, "now-", 4)) {
        double ago;
        if (parse_ago(s + 4, &ago) != 0) return -1;
        *out = now - (time_t)ago;
        return 0;
    }
    return parse_utc(s, out);
}

bool d9_wall_time_is_old_spelling(const char *s) {
    double ago;
    return s[0] == '-' && parse_ago(s + 1, &ago) == 0;
}
