/* Durations back to text with units, as the reports print them. The times users type are
 * parsed by common/time_arg.h (included here for the analysis options). */
#ifndef D9_ANALYSIS_TIME_ARG_H
#define D9_ANALYSIS_TIME_ARG_H

#include <stddef.h>
#include <stdint.h>

#include "common/time_arg.h"

/* "850 ns", "12.3 us", "50.280 ms", "4.810 s" */
const char *d9a_format_ns(char *buf, size_t len, uint64_t ns);

#endif
