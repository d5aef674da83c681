#include "analysis/time_arg.h"

#include <inttypes.h>
#include <stdio.h>

const char *d9a_format_ns(char *buf, size_t len, uint64_t ns) {
    if (ns < 1000) snprintf(buf, len, "%" PRIu64 " ns", ns);
    else if (ns < 1000000) snprintf(buf, len, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000000000) snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
    else snprintf(buf, len, "%.3f s", (double)ns / 1e9);
    return buf;
}
