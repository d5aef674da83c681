/* What `dial9 serve` says of a run that is a flight recorder's dump (docs/flight-recorder.md):
 * its trigger and window from its manifest, or that it is incomplete (no manifest). */
#ifndef D9_SERVE_DUMP_INFO_H
#define D9_SERVE_DUMP_INFO_H

#include "common/json_writer.h"

/* The member "flight_dump" of a run in /api/index: null when the run's directory (`run`,
 * beneath root_fd) is not a dump; else {"complete": false} or {"complete": true, "trigger":
 * kind, "rule", "event", "reason" (each null when not said), "at_unix_ns", "from_unix_ns",
 * "to_unix_ns", "lookback_ms", "lookforward_ms", "summary": one line for people}. */
void d9_serve_dump_json(d9_json *j, int root_fd, const char *run);

#endif
