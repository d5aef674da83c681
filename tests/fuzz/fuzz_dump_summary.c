/* A flight-recorder dump's manifest.json as the readers take it (src/common/dump_summary.c:
 * `dial9 dumps`, serve's index, analyze of a dump), which may come from S3 or any directory:
 * arbitrary bytes never read past the buffer (ASan) nor overflow (UBSan); an accepted manifest
 * has a trigger kind and NUL-terminated fields, and its one-line summary is bounded. */
#include <stdlib.h>
#include <string.h>

#include "common/dump_summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a copy of exactly size bytes (no NUL after it), so a read past the end is ASan's */
    char *json = malloc(size ? size : 1);
    if (!json) return 0;
    if (size) memcpy(json, data, size);
    d9_dump_summary s;
    memset(&s, 0x5a, sizeof s);
    if (d9_dump_summary_parse(json, size, &s)) {
        if (!s.kind[0] || !memchr(s.kind, 0, sizeof s.kind) || !memchr(s.rule, 0, sizeof s.rule) ||
            !memchr(s.event, 0, sizeof s.event) || !memchr(s.reason, 0, sizeof s.reason))
            abort();
        char line[512];
        d9_dump_summary_line(&s, line, sizeof line);
        if (!memchr(line, 0, sizeof line)) abort();
    }
    free(json);
    return 0;
}
