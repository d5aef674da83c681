#include "analysis/time_arg.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int d9a_parse_duration(const char *s, uint64_t *ns) {
    if (!s || !*s || *s == '-' || *s == '+' || isspace((unsigned char)*s)) return -1;
    /* integer part exactly (timestamps exceed a double's 53 bits), then a fraction */
    const char *p = s;
    uint64_t whole = 0;
    bool digits = false;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10) return -1;
        whole = whole * 10 + d;
        p++;
        digits = true;
    }
    double frac = 0;
    if (*p == '.') {
        p++;
        double scale = 0.1;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
            digits = true;
        }
    }
    if (!digits) return -1;
    static const struct {
        const char *unit;
        uint64_t mult;
    } units[] = {{"ns", 1},           {"us", 1000},          {"\xc2\xb5s", 1000},
                 {"ms", 1000000},     {"s", 1000000000ull},  {"m", 60000000000ull},
                 {"min", 60000000000ull}, {"h", 3600000000000ull}, {"", 1}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].unit) != 0) continue;
        uint64_t m = units[i].mult;
        if (m && whole > UINT64_MAX / m) return -1;
        double f = frac * (double)m;
        uint64_t fi = (uint64_t)llround(f);
        if (whole * m > UINT64_MAX - fi) return -1;
        *ns = whole * m + fi;
        return 0;
    }
    return -1;
}

int d9a_parse_time_arg(const char *s, d9a_time_arg *out) {
    if (!s) return -1;
    bool absolute = *s == '@';
    uint64_t ns;
    if (d9a_parse_duration(absolute ? s + 1 : s, &ns) != 0) return -1;
    *out = (d9a_time_arg){.set = true, .absolute = absolute, .ns = ns};
    return 0;
}

const char *d9a_format_ns(char *buf, size_t len, uint64_t ns) {
    if (ns < 1000) snprintf(buf, len, "%" PRIu64 " ns", ns);
    else if (ns < 1000000) snprintf(buf, len, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000000000) snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
    else snprintf(buf, len, "%.3f s", (double)ns / 1e9);
    return buf;
}
