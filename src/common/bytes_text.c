#include "common/bytes_text.h"

#include <stdio.h>

const char *d9_bytes_text(char *buf, size_t len, double bytes) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = bytes < 0 ? -bytes : bytes;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%s%.*f %s", bytes < 0 ? "-" : "", u ? 1 : 0, v, unit[u]);
    return buf;
}
