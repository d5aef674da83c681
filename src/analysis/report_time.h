/* Times of a report as the text and JSON renderers print them. */
#ifndef D9_ANALYSIS_REPORT_TIME_H
#define D9_ANALYSIS_REPORT_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

/* Seconds from the trace's first event to ts (negative before it). */
double d9a_rel_s(const d9a_report *r, uint64_t ts);
/* ISO 8601 UTC wall-clock time of ts, from the first ClockSyncEvent; false without one. */
bool d9a_wall_time(const d9a_report *r, uint64_t ts, char *buf, size_t len);

#endif
