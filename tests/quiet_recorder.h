/* A recorder configuration for the tests that drive the recorder themselves: their own trace
 * directory, and none of what would run on its own beside them (the schedule profile's
 * off-CPU sampling, task dumps, the background symbolizer), so the trace holds what the test
 * did. Header-only: each test is one program. */
#ifndef D9_TESTS_QUIET_RECORDER_H
#define D9_TESTS_QUIET_RECORDER_H

#include <stdbool.h>

#include "dial9/dial9.h"

static inline void d9t_quiet_config(d9_config *cfg, const char *trace_dir) {
    d9_config_init(cfg);
    cfg->trace_dir = trace_dir;
    cfg->schedule_profile = false;
    cfg->task_dumps = false;
    cfg->symbolize = false;
}

#endif
