/* DIAL9_* variables that no part of dial9 reads (unknown_variables.h). */
#include "core/unknown_variables.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* Every DIAL9_ variable read under src/, sorted (tests/scripts/test_unknown_variables.sh). */
static const char *const k_known[] = {
    "DIAL9_ADAPTER_MAX_OBJECTS", "DIAL9_BUFFER_KB", "DIAL9_CLOCK", "DIAL9_COMPRESS",
    "DIAL9_CPU_PROFILE_ENABLED", "DIAL9_CPU_SAMPLER", "DIAL9_CPU_SAMPLE_HZ", "DIAL9_DEBUG_FILE_DIRS",
    "DIAL9_DUMPS", "DIAL9_DUMP_DEBOUNCE_SECS", "DIAL9_DUMP_DIR", "DIAL9_DUMP_GIVE_UP_MS",
    "DIAL9_DUMP_LOOKBACK_SECS", "DIAL9_DUMP_LOOKFORWARD_SECS", "DIAL9_DUMP_MAX_PER_HOUR",
    "DIAL9_ENABLED", "DIAL9_FLIGHT_KEEP_SECS", "DIAL9_FLIGHT_MEMORY_MB", "DIAL9_FLIGHT_SEGMENT_MS",
    "DIAL9_FLUSH_MS", "DIAL9_FOLD_COMMAND", "DIAL9_MAX_DISK_USAGE_MB", "DIAL9_MAX_FILE_SIZE_MB",
    "DIAL9_MEMORY_BUDGET_MB", "DIAL9_MEMORY_PROFILE_ENABLED", "DIAL9_MEMORY_SAMPLE_BYTES",
    "DIAL9_MEMORY_SEED", "DIAL9_MODE", "DIAL9_OVERHEAD_BUDGET_PCT", "DIAL9_POLL_CPU_MIN_US",
    "DIAL9_PRELOAD_LIB", "DIAL9_ROTATION_SECS", "DIAL9_S3_BREAKER_SECS", "DIAL9_S3_BUCKET",
    "DIAL9_S3_CACHE_DIR", "DIAL9_S3_CACHE_MAX_MB", "DIAL9_S3_EXIT_WAIT_SECS",
    "DIAL9_S3_MULTIPART_THRESHOLD_MB", "DIAL9_S3_PART_SIZE_MB", "DIAL9_S3_PATH_STYLE",
    "DIAL9_S3_PREFIX", "DIAL9_S3_STALL_SECS", "DIAL9_S3_TABLES", "DIAL9_SCHEDSTAT",
    "DIAL9_SCHEDSTAT_RESOLUTION_US", "DIAL9_SCHEDULE_PROFILE_ENABLED", "DIAL9_SERVICE",
    "DIAL9_SERVICE_NAME", "DIAL9_SWITCH_STACKS_PER_SEC", "DIAL9_SYMBOLIZE",
    "DIAL9_SYMBOLIZE_EXIT_WAIT_SECS", "DIAL9_TASK_DUMPS", "DIAL9_THREAD_CPU", "DIAL9_THREAD_CPU_TIME",
    "DIAL9_TRACE_CHILDREN", "DIAL9_TRACE_DIR", "DIAL9_TRIGGERS", "DIAL9_VARIABLES_NAMED",
};
enum { KNOWN = sizeof k_known / sizeof k_known[0], NAME_MAX_LEN = 64 };

bool d9_known_variable(const char *name) {
    for (size_t i = 0; i < KNOWN; i++)
        if (!strcmp(name, k_known[i])) return true;
    return false;
}

/* Edit distance (insertions, deletions, substitutions) of two names shorter than NAME_MAX_LEN. */
static size_t distance(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b), row[NAME_MAX_LEN + 1];
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

int d9_warn_unknown_variables(const char *who) {
    int n = 0;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "DIAL9_", 6)) continue;
        size_t len = strcspn(*e, "=");
        char name[NAME_MAX_LEN];
        if (len < sizeof name) {
            memcpy(name, *e, len);
            name[len] = 0;
            if (d9_known_variable(name)) continue;
        }
        /* the nearest known name, when near enough to be the one meant */
        const char *near = NULL;
        size_t best = 4;
        for (size_t i = 0; i < KNOWN && len < NAME_MAX_LEN; i++) {
            size_t d = distance(*e, len, k_known[i]);
            if (d < best) best = d, near = k_known[i];
        }
        fprintf(stderr, "%s: %.*s%s is not a variable dial9 reads (ignored)%s%s%s\n", who,
                (int)(len < 200 ? len : 200), *e, len < 200 ? "" : "...", near ? ": did you mean " : "",
                near ? near : "", near ? "?" : "");
        n++;
    }
    return n;
}

void d9_warn_unknown_variables_once(void) {
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&said)) return;
    const char *named = getenv(D9_VARIABLES_NAMED);
    if (named && !strcmp(named, "1")) return; /* dial9 run named them, in its own words */
    (void)d9_warn_unknown_variables("dial9");
}
