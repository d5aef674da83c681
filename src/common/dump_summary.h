/* What a flight recorder's dump says of itself (docs/flight-recorder.md), read from its
 * manifest.json for the readers that list dumps: `dial9 dumps`, `dial9 serve`'s run list,
 * `dial9 analyze` of a dump (its window starts at the trigger's look-back). The manifest is
 * written last: a dump directory (or a dump under S3's dumps/) without one is incomplete. */
#ifndef D9_COMMON_DUMP_SUMMARY_H
#define D9_COMMON_DUMP_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define D9_DUMP_MARKER_FILE ".dial9-dump"
#define D9_DUMP_MANIFEST_FILE "manifest.json"

typedef struct d9_dump_summary {
    char kind[16];     /* "api", "control", "rule", "crash" */
    char rule[96], event[160], reason[128];
    int64_t at_unix_ns, from_unix_ns, to_unix_ns;
    uint64_t at_mono_ns, from_mono_ns, to_mono_ns; /* the trace's clock */
    uint64_t lookback_ms, lookforward_ms;
    uint64_t segments, bytes, merged_triggers;
} d9_dump_summary;

/* Read a manifest's text. false when it is not a dial9-dump manifest or lacks its trigger
 * or window. */
bool d9_dump_summary_parse(const char *json, size_t len, d9_dump_summary *out);

typedef enum d9_dump_state {
    D9_DUMP_NOT_A_DUMP = 0, /* no .dial9-dump marker */
    D9_DUMP_INCOMPLETE,     /* a marker, no manifest: interrupted */
    D9_DUMP_UNREADABLE,     /* a manifest that does not parse */
    D9_DUMP_COMPLETE,
} d9_dump_state;

/* What the directory `dir_fd` (a handle on it) is; *out filled when COMPLETE. */
d9_dump_state d9_dump_dir_read(int dir_fd, d9_dump_summary *out);

/* One line: "rule poll_ms>20 (PollEndEvent: ...) at 2026-12-06T09:00:00.123Z, window
 * 30000 ms before to 5000 ms after, 3 segments". */
void d9_dump_summary_line(const d9_dump_summary *s, char *out, size_t len);

#endif
