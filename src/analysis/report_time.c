/* Times of a report as the renderers print them. */
#include "analysis/report_time.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

/* Seconds from the trace's first event (negative before it). */
double d9a_rel_s(const d9a_report *r, uint64_t ts) {
    return ts >= r->trace_first_ns ? (double)(ts - r->trace_first_ns) / 1e9
                                   : -(double)(r->trace_first_ns - ts) / 1e9;
}

/* ISO 8601 UTC wall-clock time of a trace timestamp, from the first ClockSyncEvent. */
bool d9a_wall_time(const d9a_report *r, uint64_t ts, char *buf, size_t len) {
    if (!r->have_clock_sync) return false;
    int64_t delta = (int64_t)(ts - r->clock_mono_ns);
    int64_t real = (int64_t)r->clock_realtime_ns + delta;
    if (real < 0) return false;
    time_t sec = (time_t)(real / 1000000000);
    struct tm tm;
    if (!gmtime_r(&sec, &tm)) return false;
    char date[40];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06" PRId64 "Z", date, (real % 1000000000) / 1000);
    return true;
}
