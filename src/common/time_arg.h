/* The one grammar of the times a user types (--from/--to of analyze, check and export):
 *
 *   5s  250ms  10us  42ns  1.5s  2m  1h  (units: ns, us, µs, ms, s, m, min, h)
 *                     a time since the trace start (its first timestamp)
 *   -15m  -500ms      a time before the trace end (its last timestamp)
 *   @503226032430072  an absolute CLOCK_MONOTONIC timestamp in ns (@ also takes a unit:
 *                     @503226.5s)
 *
 * A bare number is refused ("5": seconds? ns?), as are signs other than a leading '-',
 * spaces, junk after the unit, and values past 2^64 ns. */
#ifndef D9_COMMON_TIME_ARG_H
#define D9_COMMON_TIME_ARG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* For --help texts and error messages. */
#define D9_TIME_ARG_FORMS "5s, 250ms, 10us, 1h (since the trace start), -15m (before its end), @NS (absolute ns)"

typedef enum d9_time_base {
    D9_TIME_FROM_START = 0,
    D9_TIME_FROM_END,
    D9_TIME_ABSOLUTE,
} d9_time_base;

typedef struct d9_time_arg {
    bool set; /* false: not given */
    d9_time_base base;
    uint64_t ns; /* the offset (FROM_START, FROM_END) or the timestamp (ABSOLUTE) */
} d9_time_arg;

/* A duration with a unit, fractions allowed ("1.5s", ".5ms"). 0, or -1 (empty, no unit,
 * unknown unit, sign, space, overflow). */
int d9_parse_duration(const char *s, uint64_t *ns);

/* Parse a time argument. 0, or -1 with a message in err naming what is wrong and the
 * accepted forms (err may be NULL). */
int d9_time_arg_parse(const char *s, d9_time_arg *out, char *err, size_t errlen);

/* The timestamp t names in a trace whose timestamps run from first_ts to last_ts (saturating
 * at 0 and UINT64_MAX). */
uint64_t d9_time_arg_resolve(const d9_time_arg *t, uint64_t first_ts, uint64_t last_ts);

/* True when from and to, both given and on the same base, leave no time between them
 * (the commands refuse that before reading anything). */
bool d9_time_window_empty(const d9_time_arg *from, const d9_time_arg *to);

/* The one rule for what a time window holds, for every command that takes --from/--to
 * (analyze, check, export; stats and dump read whole traces):
 *
 *   - the window is [from, to): from is inclusive, to exclusive; an unset --from is the
 *     trace's first timestamp, an unset --to leaves the window open to the trace's end;
 *   - an item at one time (a wake, a sample, a queue reading, a spawn) is in the window when
 *     its timestamp is;
 *   - a slice (a poll, a park, an off-CPU interval) is in the window when its START is, so
 *     windows side by side share no slice and together hold what the larger window holds
 *     (the export still draws such a slice cut at --to);
 *   - a window that holds none of the trace's time (--from after its last timestamp, --to at
 *     or before its first) is refused, with a message that says which end is wrong.
 *
 * Relative times resolve against the trace's first and last timestamps (the smallest and
 * largest of all its events': common to every command, whatever order the files are in). */
typedef struct d9_time_window {
    uint64_t from; /* inclusive */
    uint64_t to;   /* exclusive; UINT64_MAX without --to */
} d9_time_window;

/* Resolve --from/--to (unset: not given) on a trace whose timestamps run from first_ts to
 * last_ts. 0, or -1 with a message in err when the window holds none of the trace. */
int d9_time_window_resolve(const d9_time_arg *from, const d9_time_arg *to, uint64_t first_ts,
                           uint64_t last_ts, d9_time_window *out, char *err, size_t errlen);
/* The same judgement on a window resolved before the trace's end was known (a one-pass
 * reader): 0, or -1 with the message when it holds none of [first_ts, last_ts]. */
int d9_time_window_check(const d9_time_window *w, uint64_t first_ts, uint64_t last_ts, char *err,
                         size_t errlen);

static inline bool d9_time_window_holds(const d9_time_window *w, uint64_t ts) {
    return ts >= w->from && ts < w->to;
}

#endif
