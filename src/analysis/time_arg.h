/* Times and durations as people type and read them: "1.5s", "200ms", "350us", "42" (ns),
 * "@503226032430072" (an absolute CLOCK_MONOTONIC timestamp), and back to text with units. */
#ifndef D9_ANALYSIS_TIME_ARG_H
#define D9_ANALYSIS_TIME_ARG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9a_time_arg {
    bool set;
    bool absolute; /* "@..." : a trace timestamp; otherwise ns since the trace start */
    uint64_t ns;
} d9a_time_arg;

/* A duration with an optional unit (ns, us, ms, s, m, h; no unit = ns), fractions allowed.
 * 0, or -1 for anything else (empty, negative, junk after the unit, overflow). */
int d9a_parse_duration(const char *s, uint64_t *ns);
/* A --from/--to value: a duration since the trace start, or '@' and an absolute timestamp
 * (which may carry a unit too, e.g. "@503226.5s"). */
int d9a_parse_time_arg(const char *s, d9a_time_arg *out);

/* "850 ns", "12.3 us", "50.280 ms", "4.810 s" */
const char *d9a_format_ns(char *buf, size_t len, uint64_t ns);

#endif
