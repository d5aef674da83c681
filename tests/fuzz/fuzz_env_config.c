/* The environment as the recorder reads it (src/core/config.c d9_config_from_env,
 * flight_config.c, flight_rules.c), on arbitrary values: whoever starts the program sets them.
 * Input: lines, each a variable (its first byte picks one of the variables read) and its value
 * (the rest of the line). Never reads past a value (ASan) nor overflows (UBSan); a refused
 * configuration says why and is disabled; every flight rule kept has a NUL-terminated text,
 * and a bad rule is named. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/flight_config.h"
#include "core/flight_rules.h"
#include "dial9/dial9.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const g_vars[] = {
    "DIAL9_ENABLED", "DIAL9_TRACE_DIR", "DIAL9_SERVICE", "DIAL9_SERVICE_NAME", "DIAL9_MAX_FILE_SIZE_MB",
    "DIAL9_MAX_DISK_USAGE_MB", "DIAL9_ROTATION_SECS", "DIAL9_BUFFER_KB", "DIAL9_MEMORY_BUDGET_MB", "DIAL9_FLUSH_MS",
    "DIAL9_SCHEDSTAT", "DIAL9_POLL_CPU_MIN_US", "DIAL9_THREAD_CPU", "DIAL9_THREAD_CPU_TIME",
    "DIAL9_SCHEDSTAT_RESOLUTION_US", "DIAL9_CLOCK", "DIAL9_CPU_PROFILE_ENABLED", "DIAL9_CPU_SAMPLE_HZ",
    "DIAL9_CPU_SAMPLER", "DIAL9_SCHEDULE_PROFILE_ENABLED", "DIAL9_SWITCH_STACKS_PER_SEC",
    "DIAL9_OVERHEAD_BUDGET_PCT", "DIAL9_TASK_DUMPS", "DIAL9_SYMBOLIZE", "DIAL9_COMPRESS", "DIAL9_S3_BUCKET",
    "DIAL9_S3_PREFIX", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",
    "DIAL9_S3_PATH_STYLE", "DIAL9_SYMBOLIZE_EXIT_WAIT_SECS", "DIAL9_S3_EXIT_WAIT_SECS", "DIAL9_S3_STALL_SECS",
    "DIAL9_S3_BREAKER_SECS", "DIAL9_S3_MULTIPART_THRESHOLD_MB", "DIAL9_S3_PART_SIZE_MB",
    "DIAL9_ADAPTER_MAX_OBJECTS", "DIAL9_TRACE_CHILDREN", "DIAL9_MEMORY_PROFILE_ENABLED",
    "DIAL9_MEMORY_SAMPLE_BYTES", "DIAL9_MEMORY_SEED", "DIAL9_MODE", "DIAL9_TRIGGERS", "DIAL9_FLIGHT_MEMORY_MB",
    "DIAL9_FLIGHT_KEEP_SECS", "DIAL9_FLIGHT_SEGMENT_MS", "DIAL9_DUMP_LOOKBACK_SECS", "DIAL9_DUMP_LOOKFORWARD_SECS",
    "DIAL9_DUMP_DEBOUNCE_SECS", "DIAL9_DUMP_MAX_PER_HOUR", "DIAL9_DUMP_GIVE_UP_MS", "DIAL9_DUMP_DIR",
    "DIAL9_DUMPS"};
#define NVARS (sizeof g_vars / sizeof *g_vars)

static void check_rules(const d9_flight_rules *r, size_t bad, const char *err) {
    if (r->count > D9_FLIGHT_MAX_RULES) abort();
    for (size_t i = 0; i < r->count; i++)
        if (!memchr(r->rule[i].text, 0, sizeof r->rule[i].text)) abort();
    if (bad && !err[0]) abort(); /* a bad rule is named */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;

    d9_flight_rules rules;
    char err[1024] = "";
    check_rules(&rules, d9_flight_rules_parse(text, &rules, err, sizeof err), err);

    for (size_t i = 0; i < NVARS; i++) unsetenv(g_vars[i]);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        setenv(g_vars[(unsigned char)line[0] % NVARS], line + 1, 1);
    }
    d9_config cfg;
    if (d9_config_from_env(&cfg) != D9_OK) {
        const char *why = d9_last_error();
        if (!why || !why[0] || cfg.enabled) abort(); /* refused: says why, records nothing */
    }
    d9_flight_config *fc = malloc(sizeof *fc);
    if (fc) {
        static int null_fd = -1;
        if (null_fd < 0) null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        int saved = dup(2); /* flight_config says bad values on stderr: not in the fuzzer's log */
        dup2(null_fd, 2);
        d9_flight_config_from_env(fc, cfg.trace_dir ? cfg.trace_dir : "/tmp/dial9-traces");
        dup2(saved, 2);
        close(saved);
        check_rules(&fc->rules, 0, "");
        if (!memchr(fc->dump_dir, 0, sizeof fc->dump_dir)) abort();
        free(fc);
    }
    free(text);
    return 0;
}
