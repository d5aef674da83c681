/* The one grammar of wall-clock times, beside the trace times of common/time_arg.h. A --from or
 * --to value means one thing whatever the PATH is:
 *
 *   5s  250ms  1h          since the trace's start      (common/time_arg.h: trace time)
 *   -15m  -2h              before the trace's end
 *   @NS                    an absolute CLOCK_MONOTONIC timestamp
 *   now  now-15m  now-1d   wall clock: now, or a duration (s, m, h, d) before now
 *   2026-04-01[THH:MM[:SS]][Z]   wall clock, UTC
 *
 * Wall-clock times choose the segments of s3:// inputs and `serve --bucket` by the times in
 * their keys (fleet/s3_fetch.h); trace times window the events of what was read. Until this
 * grammar, `-15m` with an s3:// input meant "before now": that spelling is now refused there,
 * with a message that names `now-15m`, rather than silently taking the other meaning. */
#ifndef D9_FLEET_WALL_TIME_H
#define D9_FLEET_WALL_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* For --help texts and messages. */
#define D9_WALL_TIME_FORMS "now, now-15m, now-2h, now-1d, or YYYY-MM-DD[THH:MM[:SS]][Z] (UTC)"

/* A wall-clock time (the forms above) into UTC seconds; now is the current time. 0, or -1 when s
 * is not one. */
int d9_wall_time_parse(const char *s, time_t now, time_t *out);

/* Whether s is the old wall-clock spelling -DURATION (s, m, h, d), which is now a trace time
 * (before the trace's end): refused for s3:// inputs, see above. */
bool d9_wall_time_is_old_spelling(const char *s);

#endif
