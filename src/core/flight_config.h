/* The flight recorder's settings (docs/flight-recorder.md), read from the environment at
 * d9_start: DIAL9_MODE, DIAL9_FLIGHT_*, DIAL9_TRIGGERS, DIAL9_DUMP_*. A bad value is said on
 * stderr, naming the variable (a bad rule: naming the rule), and its default is used: the
 * program runs and records. */
#ifndef D9_CORE_FLIGHT_CONFIG_H
#define D9_CORE_FLIGHT_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/flight_rules.h"
#include "dial9/dial9.h"

typedef struct d9_flight_config {
    bool active;            /* memory mode, rules or DIAL9_DUMPS=1: the flight thread runs */
    bool memory;            /* DIAL9_MODE=memory */
    uint64_t memory_bytes;  /* DIAL9_FLIGHT_MEMORY_MB (default 64): sealed segments kept */
    uint64_t keep_ns;       /* DIAL9_FLIGHT_KEEP_SECS (default 300): and none older */
    uint64_t segment_ns;    /* DIAL9_FLIGHT_SEGMENT_MS (default 1000): memory segments' length */
    uint64_t lookback_ns;   /* DIAL9_DUMP_LOOKBACK_SECS (default 30) */
    uint64_t lookforward_ns; /* DIAL9_DUMP_LOOKFORWARD_SECS (default 5) */
    uint64_t debounce_ns;   /* DIAL9_DUMP_DEBOUNCE_SECS (default 10) */
    uint32_t max_per_hour;  /* DIAL9_DUMP_MAX_PER_HOUR (default 6) */
    uint64_t give_up_ns;    /* DIAL9_DUMP_GIVE_UP_MS (default 10000): how long a dump waits for its
                               window's segments past its window's end and its own start */
    char dump_dir[PATH_MAX]; /* DIAL9_DUMP_DIR (default {trace_dir}-dumps) */
    d9_flight_rules rules;  /* DIAL9_TRIGGERS */
    const d9_config *recorder_cfg; /* set by the recorder: S3 for the dumps' upload (NULL: none) */
    const char *service;    /* set by the recorder: the run's service name, for the dumps' keys */
} d9_flight_config;

/* The dumps' directory into out: DIAL9_DUMP_DIR, else {trace_dir}-dumps. Returns false when
 * DIAL9_DUMP_DIR is set but empty or too long for len (the default is used: the caller says so),
 * so `dial9 run` finds a memory-mode run's dumps by the recorder's own rule, silently. */
bool d9_flight_dump_dir(const char *trace_dir, char *out, size_t len);

/* Fill fc from the environment; never fails (see above). */
void d9_flight_config_from_env(d9_flight_config *fc, const char *trace_dir);

#endif
