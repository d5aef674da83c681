/* What the adapters' counted programs share (ev_callbacks_counted, event_callbacks_counted,
 * uv_exchanges_counted; run under callgrind by tests/scripts/test_*_adapter_instructions.sh,
 * tests/scripts/lib/adapter_counted.sh): `PROGRAM N TRACE_DIR [MODE]`, the recording started
 * into TRACE_DIR as the DIAL9_* variables configure it, and at the end the line "WHAT N" and the run directory on stdout. None of it
 * is counted: callgrind collects only inside the adapter's functions each test names, so the
 * loop and its callbacks stay in the programs. Header-only: each program is one file. */
#ifndef D9_TESTS_COUNTED_PROGRAM_H
#define D9_TESTS_COUNTED_PROGRAM_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dial9/dial9.h"

/* N from `PROGRAM N TRACE_DIR [MODE]` (MODE only where `mode` is not NULL; *with_mode says
 * whether it was given); 0 after printing the usage when the arguments are wrong or N is not a
 * positive number. `what` names N in the usage: "CALLBACKS", "EXCHANGES". */
static inline long d9t_counted_n(int argc, char **argv, const char *what, const char *mode,
                                 bool *with_mode) {
    bool moded = mode && argc == 4 && strcmp(argv[3], mode) == 0;
    if (with_mode) *with_mode = moded;
    long n = argc == 3 || moded ? atol(argv[1]) : 0;
    if (n <= 0)
        fprintf(stderr, "usage: %s %s TRACE_DIR%s%s%s\n", argv[0], what, mode ? " [" : "",
                mode ? mode : "", mode ? "]" : "");
    return n;
}

/* Starts recording into trace_dir with the configuration the DIAL9_* variables give
 * (d9_config_from_env; TRACE_DIR wins over DIAL9_TRACE_DIR), so a count taken with, say,
 * DIAL9_CLOCK=tsc is one of that clock, not silently of the defaults. A bad value, or
 * DIAL9_ENABLED=0 (nothing would be recorded, so nothing counted), is an error on stderr and a
 * nonzero result; else d9_start's. The tests unset every DIAL9_* variable
 * (tests/scripts/lib/adapter_counted.sh): their bounds are the defaults'. */
static inline int d9t_counted_start(const char *trace_dir) {
    d9_config cfg;
    if (d9_config_from_env(&cfg) != D9_OK) {
        fprintf(stderr, "counted program: %s\n", d9_last_error());
        return D9_ERR_INVALID;
    }
    if (!cfg.enabled) {
        fprintf(stderr, "counted program: DIAL9_ENABLED turns recording off: nothing to count\n");
        return D9_ERR_INVALID;
    }
    cfg.trace_dir = trace_dir;
    int rc = d9_start(&cfg);
    if (rc != D9_OK) fprintf(stderr, "counted program: d9_start: %s\n", d9_last_error());
    return rc;
}

/* Stops recording, then prints "WHAT DONE" and the run directory, the lines the tests read. */
static inline void d9t_counted_report(const char *what, long done) {
    d9_stop();
    printf("%s %ld\n%s\n", what, done, d9_run_dir());
}

#endif
