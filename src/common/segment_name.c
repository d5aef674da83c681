/* Trace file names (see segment_name.h). */
#include "common/segment_name.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_suffix[] = {
    [D9_SEGMENT_SEALED] = ".bin",
    [D9_SEGMENT_GZIP] = ".bin.gz",
    [D9_SEGMENT_ACTIVE] = ".bin.active",
    [D9_SEGMENT_ZSTD] = ".bin.zst",
};

const char *d9_segment_kind_suffix(d9_segment_kind kind) {
    return (unsigned)kind < D9_SEGMENT_KINDS ? kind_suffix[kind] : "";
}

bool d9_segment_name_parse(const char *name, uint64_t *seq, d9_segment_kind *kind) {
    static const char prefix[] = "trace.";
    if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0) return false;
    const char *p = name + sizeof prefix - 1, *digits = p;
    uint64_t n = 0;
    while (*p >= '0' && *p <= '9') {
        uint64_t d = (uint64_t)(*p - '0');
        if (n > (UINT64_MAX - d) / 10) return false; /* overflow: not a name we write */
        n = n * 10 + d;
        p++;
    }
    if (p == digits) return false;
    for (int k = D9_SEGMENT_SEALED; k < D9_SEGMENT_KINDS; k++) {
        if (strcmp(p, kind_suffix[k]) == 0) {
            *seq = n;
            *kind = (d9_segment_kind)k;
            return true;
        }
    }
    return false;
}

void d9_segment_name_format(char *buf, size_t size, uint64_t seq, d9_segment_kind kind) {
    snprintf(buf, size, "trace.%" PRIu64 "%s", seq, d9_segment_kind_suffix(kind));
}

static bool ends_with(const char *s, size_t n, const char *suffix) {
    size_t m = strlen(suffix);
    return n > m && memcmp(s + n - m, suffix, m) == 0;
}

bool d9_is_trace_file_name(const char *name) {
    if (!name) return false;
    size_t n = strlen(name);
    for (int k = D9_SEGMENT_SEALED; k < D9_SEGMENT_KINDS; k++)
        if (ends_with(name, n, kind_suffix[k])) return true;
    return false;
}
