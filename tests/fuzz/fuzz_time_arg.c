/* The --from/--to grammar (src/common/time_arg.c) on arbitrary strings: never reads past the
 * string (ASan) nor overflows (UBSan), always either accepts or writes a message, and what it
 * accepts has the shape the grammar promises: an optional '-' or '@', digits (a '.' allowed),
 * then a unit (only '@' may go without one), with a value that a canonical rewrite in ns parses
 * back to exactly. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/time_arg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    d9_time_arg t = {0};
    char err[256];
    err[0] = '\0';
    if (d9_time_arg_parse(s, &t, err, sizeof err) == 0) {
        if (!t.set) abort();
        const char *p = s;
        if (t.base == D9_TIME_FROM_END && *p++ != '-') abort();
        if (t.base == D9_TIME_ABSOLUTE && *p++ != '@') abort();
        if (t.base == D9_TIME_FROM_START && (*p == '-' || *p == '@')) abort();
        size_t digits = strspn(p, "0123456789.");
        if (digits == 0) abort();
        if (p[digits] == '\0' && (t.base != D9_TIME_ABSOLUTE || memchr(p, '.', digits))) abort();
        /* the value in plain ns reads back the same */
        char canon[64];
        snprintf(canon, sizeof canon, "%s%" PRIu64 "ns",
                 t.base == D9_TIME_FROM_END ? "-" : t.base == D9_TIME_ABSOLUTE ? "@" : "", t.ns);
        d9_time_arg u;
        if (d9_time_arg_parse(canon, &u, NULL, 0) != 0 || u.base != t.base || u.ns != t.ns) abort();
        (void)d9_time_arg_resolve(&t, 1000, 2000);
        (void)d9_time_arg_resolve(&t, UINT64_MAX, UINT64_MAX);
    } else if (err[0] == '\0' || t.set) {
        abort(); /* a refusal always says why, and leaves the output alone */
    }
    uint64_t ns;
    (void)d9_parse_duration(s, &ns);
    free(s);
    return 0;
}
