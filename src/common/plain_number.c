/* Plain numbers of environment variables (see plain_number.h). */
#include "common/plain_number.h"

#include <string.h>

/* s without its surrounding spaces: [*begin, *end), false when nothing is left. */
static bool trimmed(const char *s, const char **begin, const char **end) {
    if (!s) return false;
    while (*s == ' ') s++;
    const char *e = s + strlen(s);
    while (e > s && e[-1] == ' ') e--;
    *begin = s;
    *end = e;
    return e > s;
}

bool d9_plain_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    const char *b, *e;
    if (!trimmed(s, &b, &e) || strspn(b, "0123456789") != (size_t)(e - b)) return false;
    uint64_t v = 0;
    for (const char *p = b; p < e; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return false; /* beyond 2^64 - 1 */
        v = v * 10 + d;
    }
    if (v < min || v > max) return false;
    *out = v;
    return true;
}

bool d9_plain_decimal(const char *s, double *out) {
    const char *b, *e;
    if (!trimmed(s, &b, &e)) return false;
    size_t len = (size_t)(e - b), digits = strspn(b, "0123456789");
    size_t frac = 0;
    if (digits < len && b[digits] == '.') frac = strspn(b + digits + 1, "0123456789");
    size_t used = digits + (digits < len && b[digits] == '.' ? 1 + frac : 0);
    if (used != len || digits + frac == 0) return false;
    /* digits / 10^frac, computed here: strtod would read "0,5" under a program's locale */
    if (digits + frac > 15) return false; /* exact in a double; no setting needs more */
    uint64_t n = 0, scale = 1;
    for (const char *p = b; p < e; p++) {
        if (*p == '.') continue;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    for (size_t i = 0; i < frac; i++) scale *= 10;
    double v = (double)n / (double)scale;
    *out = v;
    return true;
}
