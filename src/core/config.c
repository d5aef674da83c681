/* d9_config: defaults, DIAL9_* environment variables, validation. A bad value is always an
 * error naming the variable (or field) and the value, never a silent default, and leaves the
 * configuration disabled: a program that reports the error and starts anyway records
 * nothing (the program always runs; a bad config never records with half of it). */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/plain_number.h"
#include "core/clock.h"
#include "core/config_abi.h"
#include "core/last_error.h"
#include "core/thread_cpu_clock.h"
#include "core/unknown_variables.h"
#include "aws/s3_client.h"
#include "sinks/step_upload.h"
#include "dial9/dial9.h"

#define MIB ((uint64_t)1024 * 1024)

static void set_defaults(d9_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->struct_size = sizeof *cfg;
    cfg->enabled = true;
    cfg->trace_dir = "/tmp/dial9-traces";
    cfg->service = NULL;
    cfg->max_file_size = 64 * MIB;
    cfg->max_total_size = 1024 * MIB;
    cfg->rotation_secs = 60;
    cfg->buffer_kb = 1024;
    cfg->memory_budget_mb = 64;
    cfg->symbolize_exit_wait_secs = 5;
    cfg->flush_ms = 20;
    cfg->schedstat = true;
    cfg->schedstat_resolution_us = 1000;
    cfg->clock = D9_CLOCK_AUTO;
    cfg->thread_cpu_time = D9_THREAD_CPU_TIME_PARK;
    cfg->cpu_profile = false;
    cfg->cpu_sample_hz = 99;
    cfg->sampler = D9_SAMPLER_AUTO;
    cfg->schedule_profile = true;
    cfg->switch_stacks_per_sec = 500;
    cfg->overhead_budget_pct = 1.0;
    cfg->task_dumps = true;
    cfg->symbolize = true;
    cfg->compress = D9_COMPRESS_AUTO;
    cfg->s3_bucket = NULL;
    cfg->s3_prefix = "dial9-traces";
    cfg->s3_region = "us-east-1";
    cfg->s3_endpoint = NULL;
    cfg->s3_path_style = -1;
    cfg->s3_exit_wait_secs = 10;
    cfg->memory_sample_bytes = 512 * 1024;
}

/* ---- the caller's struct, whatever version of the header it was compiled with ----
 * A caller's d9_config is `struct_size` bytes: a prefix of ours when it was compiled with an
 * older header (fields are only ever appended, docs/abi.md), longer with a newer one. The
 * library reads and writes exactly that many bytes, never sizeof(d9_config). */

/* The smallest struct a caller can hand in: struct_size, enabled, trace_dir. */
#define MIN_CONFIG_SIZE (offsetof(d9_config, trace_dir) + sizeof(const char *))
/* Far beyond any version: a larger struct_size is garbage, not a newer header. */
#define MAX_CONFIG_SIZE 65536u

/* Write `full` (ours) as a caller's struct of `size` bytes: our fields within them, zeros for
 * the fields of a newer header this library does not know. */
static void write_as_caller(d9_config *out, const d9_config *full, size_t size) {
    size_t n = size < sizeof *full ? size : sizeof *full;
    memcpy(out, full, n);
    if (size > n) memset((char *)out + n, 0, size - n);
    if (size >= sizeof out->struct_size) out->struct_size = size <= MAX_CONFIG_SIZE ? (uint32_t)size : 0;
}

int d9_config_from_caller(const d9_config *in, d9_config *out) {
    if (!in) {
        d9_set_error("config is NULL");
        return D9_ERR_INVALID;
    }
    size_t size = in->struct_size;
    if (size < MIN_CONFIG_SIZE || size > MAX_CONFIG_SIZE || size % _Alignof(d9_config) != 0) {
        d9_set_error("config struct_size = %zu: not the size of a d9_config (fill it with d9_config_init "
                     "or d9_config_from_env)", size);
        return D9_ERR_INVALID;
    }
    set_defaults(out);
    memcpy(out, in, size < sizeof *out ? size : sizeof *out);
    /* A newer header's fields that this library would ignore: refuse rather than record
     * without what the caller asked for. */
    for (size_t i = sizeof *out; i < size; i++) {
        if (((const unsigned char *)in)[i] != 0) {
            d9_set_error("config sets options unknown to this library (dial9 %s, %zu-byte d9_config; "
                         "the program's is %zu bytes): use the libdial9 it was built with",
                         DIAL9_VERSION_STRING, sizeof *out, size);
            return D9_ERR_INVALID;
        }
    }
    out->struct_size = sizeof *out;
    return D9_OK;
}

void d9_config_init_size(d9_config *cfg, size_t size) {
    if (!cfg) return;
    d9_config full;
    set_defaults(&full);
    write_as_caller(cfg, &full, size);
}

/* Every integer variable: plain digits (common/plain_number.h: no sign, so "+64" is refused
 * like "-1"), within the variable's bounds. */
static int parse_u64(const char *var, const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    if (d9_plain_u64(s, min, max, out)) return 0;
    d9_set_error("%s=\"%s\": expected an integer from %" PRIu64 " to %" PRIu64
                 " (decimal digits only, no sign)", var, s, min, max);
    return -1;
}

/* A share of one CPU in percent: a decimal from 0.01 to 100, or 0 / "off" (not governed).
 * Plain decimals only: no sign, exponent, hex, nan or inf. */
static int parse_budget_pct(const char *var, const char *s, double *out) {
    const char *p = s;
    while (*p == ' ') p++;
    if (strcasecmp(p, "off") == 0) {
        *out = 0;
        return 0;
    }
    double v;
    if (!d9_plain_decimal(s, &v) || !(v == 0 || (v >= 0.01 && v <= 100))) {
        d9_set_error("%s=\"%s\": expected a share of one CPU in percent from 0.01 to 100, or 0/off "
                     "(not governed)", var, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_bool(const char *var, const char *s, bool *out) {
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = true; return 0; }
        if (strcasecmp(s, no[i]) == 0) { *out = false; return 0; }
    }
    d9_set_error("%s=\"%s\": expected 1/0, true/false, yes/no or on/off", var, s);
    return -1;
}

static int parse_clock(const char *var, const char *s, d9_clock_mode *out) {
    if (d9_clock_mode_parse(s, out)) return 0;
    d9_set_error("%s=\"%s\": expected auto, tsc or monotonic", var, s);
    return -1;
}

static int parse_thread_cpu_time(const char *var, const char *s, d9_thread_cpu_time_mode *out) {
    if (strcasecmp(s, "park") == 0) *out = D9_THREAD_CPU_TIME_PARK;
    else if (strcasecmp(s, "every") == 0) *out = D9_THREAD_CPU_TIME_EVERY;
    else if (strcasecmp(s, "off") == 0) *out = D9_THREAD_CPU_TIME_OFF;
    else {
        d9_set_error("%s=\"%s\": expected park, every or off", var, s);
        return -1;
    }
    return 0;
}

/* Read at d9_start (thread_cpu_clock.h), checked here with the others. */
static int check_thread_cpu_source(const char *var, const char *s) {
    d9_thread_cpu_source source;
    if (d9_thread_cpu_source_parse(s, &source)) return 0;
    d9_set_error("%s=\"%s\": expected " D9_THREAD_CPU_SOURCES, var, s);
    return -1;
}

static int parse_sampler(const char *var, const char *s, d9_sampler_mode *out) {
    if (strcasecmp(s, "auto") == 0) *out = D9_SAMPLER_AUTO;
    else if (strcasecmp(s, "perf") == 0) *out = D9_SAMPLER_PERF;
    else if (strcasecmp(s, "timer") == 0) *out = D9_SAMPLER_TIMER;
    else {
        d9_set_error("%s=\"%s\": expected auto, perf or timer", var, s);
        return -1;
    }
    return 0;
}

static int parse_compress(const char *var, const char *s, d9_compress_mode *out) {
    if (strcasecmp(s, "auto") == 0) *out = D9_COMPRESS_AUTO;
    else if (strcasecmp(s, "gzip") == 0) *out = D9_COMPRESS_GZIP;
    else if (strcasecmp(s, "zstd") == 0) *out = D9_COMPRESS_ZSTD;
    else if (strcasecmp(s, "none") == 0) *out = D9_COMPRESS_NONE;
    else {
        d9_set_error("%s=\"%s\": expected auto, gzip, zstd or none", var, s);
        return -1;
    }
    return 0;
}

static int parse_string(const char *var, const char *s, const char **out) {
    if (!*s) {
        d9_set_error("%s is set but empty", var);
        return -1;
    }
    *out = s;
    return 0;
}

/* Longest trace directory (d9_config_validate); the run id and file names go below it. */
#define MAX_TRACE_DIR 3000

/* The checks of the S3 settings and the service name, for a variable or a field: `what` is
 * the variable's name (DIAL9_S3_BUCKET) or the field's (s3_bucket), said with the value. */
#define MAX_SERVICE 255
#define MAX_S3_PREFIX 512
#define MAX_S3_REGION 64

static int check_service(const char *what, const char *v) {
    if (strlen(v) <= MAX_SERVICE) return 0;
    d9_set_error("%s=\"%.48s...\" (%zu bytes): longer than %d bytes", what, v, strlen(v), MAX_SERVICE);
    return -1;
}

static int check_bucket(const char *what, const char *v) {
    size_t n = strlen(v);
    if (n >= 3 && n <= 63 && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n) return 0;
    d9_set_error("%s=\"%s\": expected an S3 bucket name, 3 to 63 characters from a-z, 0-9, '.' and '-'", what, v);
    return -1;
}

static int check_prefix(const char *what, const char *v) {
    if (strlen(v) <= MAX_S3_PREFIX) return 0;
    d9_set_error("%s=\"%.48s...\" (%zu bytes): longer than %d bytes", what, v, strlen(v), MAX_S3_PREFIX);
    return -1;
}

static int check_region(const char *what, const char *v) {
    size_t n = strlen(v);
    if (n >= 1 && n <= MAX_S3_REGION && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-") == n) return 0;
    d9_set_error("%s=\"%s\": expected an S3 region name such as us-east-1 (a-z, 0-9 and '-', up to %d)", what, v,
                 MAX_S3_REGION);
    return -1;
}

static int check_endpoint(const char *what, const char *v) {
    char why[200];
    if (d9_s3_endpoint_check(v, why, sizeof why)) return 0;
    d9_set_error("%s=\"%.600s\": not an S3 endpoint: %s", what, v, why);
    return -1;
}

static int from_env(d9_config *cfg) {
    const char *v;
    uint64_t n;
#define ENV(name) ((v = getenv(name)) != NULL)
    if (ENV("DIAL9_ENABLED") && parse_bool("DIAL9_ENABLED", v, &cfg->enabled)) return -1;
    if (ENV("DIAL9_TRACE_DIR") && parse_string("DIAL9_TRACE_DIR", v, &cfg->trace_dir)) return -1;
    if (strlen(cfg->trace_dir) > MAX_TRACE_DIR) {
        d9_set_error("DIAL9_TRACE_DIR=\"%.48s...\" (%zu bytes): longer than %d bytes", cfg->trace_dir,
                     strlen(cfg->trace_dir), MAX_TRACE_DIR);
        return -1;
    }
    /* dial9's name for it, DIAL9_SERVICE_NAME, is accepted too; DIAL9_SERVICE wins */
    const char *service_var = NULL, *region_var = NULL, *endpoint_var = NULL;
    if (ENV("DIAL9_SERVICE_NAME") && parse_string(service_var = "DIAL9_SERVICE_NAME", v, &cfg->service)) return -1;
    if (ENV("DIAL9_SERVICE") && parse_string(service_var = "DIAL9_SERVICE", v, &cfg->service)) return -1;
    if (service_var && check_service(service_var, cfg->service)) return -1;
    if (ENV("DIAL9_MAX_FILE_SIZE_MB")) {
        if (parse_u64("DIAL9_MAX_FILE_SIZE_MB", v, 1, 1u << 20, &n)) return -1;
        cfg->max_file_size = n * MIB;
    }
    if (ENV("DIAL9_MAX_DISK_USAGE_MB")) {
        if (parse_u64("DIAL9_MAX_DISK_USAGE_MB", v, 1, 1u << 30, &n)) return -1;
        cfg->max_total_size = n * MIB;
    }
    if (ENV("DIAL9_ROTATION_SECS")) {
        if (parse_u64("DIAL9_ROTATION_SECS", v, 0, 365u * 86400u, &n)) return -1;
        cfg->rotation_secs = (uint32_t)n;
    }
    if (ENV("DIAL9_BUFFER_KB")) {
        if (parse_u64("DIAL9_BUFFER_KB", v, 64, 1u << 20, &n)) return -1;
        cfg->buffer_kb = (uint32_t)n;
    }
    if (ENV("DIAL9_MEMORY_BUDGET_MB")) {
        if (parse_u64("DIAL9_MEMORY_BUDGET_MB", v, 1, 1u << 20, &n)) return -1;
        cfg->memory_budget_mb = (uint32_t)n;
    }
    if (ENV("DIAL9_FLUSH_MS")) {
        if (parse_u64("DIAL9_FLUSH_MS", v, 1, 60000, &n)) return -1;
        cfg->flush_ms = (uint32_t)n;
    }
    if (ENV("DIAL9_SCHEDSTAT") && parse_bool("DIAL9_SCHEDSTAT", v, &cfg->schedstat)) return -1;
    if (ENV("DIAL9_SCHEDSTAT_RESOLUTION_US")) {
        if (parse_u64("DIAL9_SCHEDSTAT_RESOLUTION_US", v, 0, 1000000, &n)) return -1;
        cfg->schedstat_resolution_us = (uint32_t)n;
    }
    if (ENV("DIAL9_CLOCK") && parse_clock("DIAL9_CLOCK", v, &cfg->clock)) return -1;
    if (ENV("DIAL9_THREAD_CPU_TIME") && parse_thread_cpu_time("DIAL9_THREAD_CPU_TIME", v, &cfg->thread_cpu_time))
        return -1;
    if (ENV("DIAL9_THREAD_CPU") && check_thread_cpu_source("DIAL9_THREAD_CPU", v)) return -1;
    if (ENV("DIAL9_POLL_CPU_MIN_US") && parse_u64("DIAL9_POLL_CPU_MIN_US", v, 0, 10000000, &n)) return -1; /* poll_cpu.h */
    if (ENV("DIAL9_CPU_PROFILE_ENABLED") && parse_bool("DIAL9_CPU_PROFILE_ENABLED", v, &cfg->cpu_profile))
        return -1;
    if (ENV("DIAL9_CPU_SAMPLE_HZ")) {
        if (parse_u64("DIAL9_CPU_SAMPLE_HZ", v, 1, 10000, &n)) return -1;
        cfg->cpu_sample_hz = (uint32_t)n;
    }
    if (ENV("DIAL9_CPU_SAMPLER") && parse_sampler("DIAL9_CPU_SAMPLER", v, &cfg->sampler)) return -1;
    if (ENV("DIAL9_SCHEDULE_PROFILE_ENABLED") &&
        parse_bool("DIAL9_SCHEDULE_PROFILE_ENABLED", v, &cfg->schedule_profile))
        return -1;
    if (ENV("DIAL9_SWITCH_STACKS_PER_SEC")) {
        if (parse_u64("DIAL9_SWITCH_STACKS_PER_SEC", v, 1, 1000000, &n)) return -1;
        cfg->switch_stacks_per_sec = (uint32_t)n;
    }
    if (ENV("DIAL9_OVERHEAD_BUDGET_PCT") &&
        parse_budget_pct("DIAL9_OVERHEAD_BUDGET_PCT", v, &cfg->overhead_budget_pct))
        return -1;
    if (ENV("DIAL9_TASK_DUMPS") && parse_bool("DIAL9_TASK_DUMPS", v, &cfg->task_dumps)) return -1;
    if (ENV("DIAL9_MEMORY_PROFILE_ENABLED") && parse_bool("DIAL9_MEMORY_PROFILE_ENABLED", v, &cfg->memory_profile))
        return -1;
    if (ENV("DIAL9_MEMORY_SAMPLE_BYTES") &&
        parse_u64("DIAL9_MEMORY_SAMPLE_BYTES", v, 1, (uint64_t)1 << 40, &cfg->memory_sample_bytes))
        return -1;
    if (ENV("DIAL9_MEMORY_SEED") && parse_u64("DIAL9_MEMORY_SEED", v, 0, UINT64_MAX, &cfg->memory_seed)) return -1;
    if (ENV("DIAL9_SYMBOLIZE") && parse_bool("DIAL9_SYMBOLIZE", v, &cfg->symbolize)) return -1;
    if (ENV("DIAL9_COMPRESS") && parse_compress("DIAL9_COMPRESS", v, &cfg->compress)) return -1;
    if (ENV("DIAL9_S3_BUCKET") && parse_string("DIAL9_S3_BUCKET", v, &cfg->s3_bucket)) return -1;
    if (ENV("DIAL9_S3_PREFIX")) cfg->s3_prefix = v; /* empty: keys start at version=1/ */
    /* the AWS SDKs' variables, in their order of precedence */
    if (ENV("AWS_DEFAULT_REGION") && parse_string(region_var = "AWS_DEFAULT_REGION", v, &cfg->s3_region)) return -1;
    if (ENV("AWS_REGION") && parse_string(region_var = "AWS_REGION", v, &cfg->s3_region)) return -1;
    if (ENV("AWS_ENDPOINT_URL") && parse_string(endpoint_var = "AWS_ENDPOINT_URL", v, &cfg->s3_endpoint)) return -1;
    if (ENV("AWS_ENDPOINT_URL_S3") && parse_string(endpoint_var = "AWS_ENDPOINT_URL_S3", v, &cfg->s3_endpoint))
        return -1;
    /* what S3 uses is checked only with a bucket (validate_fields), but said by its variable */
    if (cfg->s3_bucket) {
        if (check_bucket("DIAL9_S3_BUCKET", cfg->s3_bucket) ||
            (ENV("DIAL9_S3_PREFIX") && check_prefix("DIAL9_S3_PREFIX", cfg->s3_prefix)) ||
            (region_var && check_region(region_var, cfg->s3_region)) ||
            (endpoint_var && check_endpoint(endpoint_var, cfg->s3_endpoint)))
            return -1;
    }
    if (ENV("DIAL9_S3_PATH_STYLE")) {
        bool b;
        if (parse_bool("DIAL9_S3_PATH_STYLE", v, &b)) return -1;
        cfg->s3_path_style = b;
    }
    if (ENV("DIAL9_SYMBOLIZE_EXIT_WAIT_SECS")) {
        if (parse_u64("DIAL9_SYMBOLIZE_EXIT_WAIT_SECS", v, 0, 3600, &n)) return -1;
        cfg->symbolize_exit_wait_secs = (uint32_t)n;
    }
    if (ENV("DIAL9_S3_EXIT_WAIT_SECS")) {
        if (parse_u64("DIAL9_S3_EXIT_WAIT_SECS", v, 0, 3600, &n)) return -1;
        cfg->s3_exit_wait_secs = (uint32_t)n;
    }
    /* read by the S3 client and the uploader when they start (s3_client.c, upload_retry.c,
     * step_upload.c); checked here so that a bad value is an error like any other, not a
     * default used in its place once uploading starts */
    if (ENV("DIAL9_S3_BREAKER_SECS") && parse_u64("DIAL9_S3_BREAKER_SECS", v, 1, 3600, &n)) return -1;
    if (ENV("DIAL9_S3_STALL_SECS") && parse_u64("DIAL9_S3_STALL_SECS", v, 1, 3600, &n)) return -1;
    if (ENV("DIAL9_S3_MULTIPART_THRESHOLD_MB") &&
        parse_u64("DIAL9_S3_MULTIPART_THRESHOLD_MB", v, D9_S3_PART_MIN_MB, D9_S3_PART_MAX_MB, &n))
        return -1;
    if (ENV("DIAL9_S3_PART_SIZE_MB") && parse_u64("DIAL9_S3_PART_SIZE_MB", v, D9_S3_PART_MIN_MB, D9_S3_PART_MAX_MB, &n))
        return -1;
    bool children; /* read by the zero-code shim (preload_main.c); checked here likewise */
    if (ENV("DIAL9_TRACE_CHILDREN") && parse_bool("DIAL9_TRACE_CHILDREN", v, &children)) return -1;
    /* read by the loop adapters' object table at its first use; checked here so that a bad
     * value disables recording like any other (bounds: D9A_SHARDS .. 2^30, object_table.h) */
    if (ENV("DIAL9_ADAPTER_MAX_OBJECTS") && parse_u64("DIAL9_ADAPTER_MAX_OBJECTS", v, 64, 1u << 30, &n))
        return -1;
#undef ENV
    if (cfg->max_total_size < cfg->max_file_size) {
        d9_set_error("DIAL9_MAX_DISK_USAGE_MB (%" PRIu64 " MiB) is smaller than "
                     "DIAL9_MAX_FILE_SIZE_MB (%" PRIu64 " MiB)",
                     cfg->max_total_size / MIB, cfg->max_file_size / MIB);
        return -1;
    }
    return d9_config_validate(cfg);
}

int d9_config_from_env_size(d9_config *cfg, size_t size) {
    if (!cfg) {
        d9_set_error("config is NULL");
        return D9_ERR_INVALID;
    }
    d9_config_init_size(cfg, size);
    d9_warn_unknown_variables_once(); /* a misspelt DIAL9_ name would be ignored in silence */
    d9_config full;
    int rc = d9_config_from_caller(cfg, &full);
    if (rc == D9_OK && from_env(&full) != 0) rc = D9_ERR_INVALID;
    if (rc == D9_OK) {
        write_as_caller(cfg, &full, size);
        return D9_OK;
    }
    if (size >= MIN_CONFIG_SIZE) cfg->enabled = false;
    return rc;
}

static int validate_fields(const d9_config *cfg) {
    if (!cfg->trace_dir || !*cfg->trace_dir) {
        d9_set_error("trace_dir is empty");
        return -1;
    }
    if (strlen(cfg->trace_dir) > MAX_TRACE_DIR) {
        d9_set_error("trace_dir is too long (%zu bytes)", strlen(cfg->trace_dir));
        return -1;
    }
    if (cfg->max_file_size < 4096) {
        d9_set_error("max_file_size = %" PRIu64 ": must be at least 4096 bytes", cfg->max_file_size);
        return -1;
    }
    if (cfg->max_total_size < cfg->max_file_size) {
        d9_set_error("max_total_size = %" PRIu64 " is smaller than max_file_size = %" PRIu64,
                     cfg->max_total_size, cfg->max_file_size);
        return -1;
    }
    if (cfg->buffer_kb < 64 || cfg->buffer_kb > (1u << 20)) {
        d9_set_error("buffer_kb = %u: must be from 64 to 1048576", cfg->buffer_kb);
        return -1;
    }
    if (cfg->memory_budget_mb < 1 || cfg->memory_budget_mb > (1u << 20)) {
        d9_set_error("memory_budget_mb = %u: must be from 1 to 1048576", cfg->memory_budget_mb);
        return -1;
    }
    if (cfg->flush_ms < 1 || cfg->flush_ms > 60000) {
        d9_set_error("flush_ms = %u: must be from 1 to 60000", cfg->flush_ms);
        return -1;
    }
    if (cfg->clock != D9_CLOCK_AUTO && cfg->clock != D9_CLOCK_TSC && cfg->clock != D9_CLOCK_MONOTONIC) {
        d9_set_error("clock = %d: not a d9_clock_mode", (int)cfg->clock);
        return -1;
    }
    if (cfg->thread_cpu_time != D9_THREAD_CPU_TIME_PARK && cfg->thread_cpu_time != D9_THREAD_CPU_TIME_EVERY &&
        cfg->thread_cpu_time != D9_THREAD_CPU_TIME_OFF) {
        d9_set_error("thread_cpu_time = %d: not a d9_thread_cpu_time_mode", (int)cfg->thread_cpu_time);
        return -1;
    }
    if (cfg->switch_stacks_per_sec < 1 || cfg->switch_stacks_per_sec > 1000000) {
        d9_set_error("switch_stacks_per_sec = %u: must be from 1 to 1000000", cfg->switch_stacks_per_sec);
        return -1;
    }
    if (!(cfg->overhead_budget_pct == 0 ||
          (cfg->overhead_budget_pct >= 0.01 && cfg->overhead_budget_pct <= 100))) {
        d9_set_error("overhead_budget_pct = %g: must be 0 (not governed) or from 0.01 to 100",
                     cfg->overhead_budget_pct);
        return -1;
    }
    if (cfg->schedstat_resolution_us > 1000000) {
        d9_set_error("schedstat_resolution_us = %u: must be from 0 to 1000000", cfg->schedstat_resolution_us);
        return -1;
    }
    if (cfg->cpu_sample_hz < 1 || cfg->cpu_sample_hz > 10000) {
        d9_set_error("cpu_sample_hz = %u: must be from 1 to 10000", cfg->cpu_sample_hz);
        return -1;
    }
    if (cfg->sampler != D9_SAMPLER_AUTO && cfg->sampler != D9_SAMPLER_PERF && cfg->sampler != D9_SAMPLER_TIMER) {
        d9_set_error("sampler = %d: not a d9_sampler_mode", (int)cfg->sampler);
        return -1;
    }
    if (cfg->compress != D9_COMPRESS_AUTO && cfg->compress != D9_COMPRESS_NONE && cfg->compress != D9_COMPRESS_GZIP &&
        cfg->compress != D9_COMPRESS_ZSTD) {
        d9_set_error("compress = %d: not a d9_compress_mode", (int)cfg->compress);
        return -1;
    }
    if (cfg->s3_bucket) {
        if (check_bucket("s3_bucket", cfg->s3_bucket) || (cfg->s3_prefix && check_prefix("s3_prefix", cfg->s3_prefix)) ||
            check_region("s3_region", cfg->s3_region ? cfg->s3_region : "") ||
            (cfg->s3_endpoint && check_endpoint("s3_endpoint", cfg->s3_endpoint)))
            return -1;
    }
    if (cfg->s3_path_style < -1 || cfg->s3_path_style > 1) {
        d9_set_error("s3_path_style = %d: must be -1, 0 or 1", cfg->s3_path_style);
        return -1;
    }
    if (cfg->symbolize_exit_wait_secs > 3600) {
        d9_set_error("symbolize_exit_wait_secs = %u: must be from 0 to 3600", cfg->symbolize_exit_wait_secs);
        return -1;
    }
    if (cfg->s3_exit_wait_secs > 3600) {
        d9_set_error("s3_exit_wait_secs = %u: must be from 0 to 3600", cfg->s3_exit_wait_secs);
        return -1;
    }
    if (cfg->service && check_service("service", cfg->service)) return -1;
    return 0;
}

int d9_config_validate(const d9_config *cfg) {
    d9_config full;
    int rc = d9_config_from_caller(cfg, &full);
    if (rc != D9_OK) return rc;
    return validate_fields(&full) == 0 ? D9_OK : D9_ERR_INVALID;
}
