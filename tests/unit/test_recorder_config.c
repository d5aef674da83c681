/* Configuration and lifecycle: every bad value is an error naming the variable and the value;
 * d9_start_or_disabled never fails; hooks before start / after stop do nothing; stop twice. */
#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

/* DIAL9_OVERHEAD_BUDGET_PCT: a plain decimal from 0.01 to 100, or 0 / off */
static const char *const bad_budgets[] = {"", "abc", "-1", "1%", "1e1", "0x10", "nan", "inf", "101", "0.001",
                                          "1.5.2", " ", "1 2"};

static void expect_env_error(const char *var, const char *value) {
    setenv(var, value, 1);
    d9_config cfg;
    int rc = d9_config_from_env(&cfg);
    CHECK(rc == -1);
    CHECK(!cfg.enabled); /* a bad value disables recording: starting anyway records nothing */
    const char *msg = d9_last_error();
    if (!strstr(msg, var) || (*value && !strstr(msg, value))) {
        fprintf(stderr, "message for %s=%s does not name both: %s\n", var, value, msg);
        CHECK(0);
    }
    unsetenv(var);
}

static void test_env(void) {
    d9_config cfg;
    CHECK(d9_config_from_env(&cfg) == 0); /* nothing set: defaults */
    CHECK(cfg.enabled);
    CHECK_EQ_U64(cfg.max_file_size, 64ull << 20);

    setenv("DIAL9_TRACE_DIR", "/tmp/somewhere", 1);
    setenv("DIAL9_MAX_FILE_SIZE_MB", "8", 1);
    setenv("DIAL9_MAX_DISK_USAGE_MB", "100", 1);
    setenv("DIAL9_ROTATION_SECS", "0", 1);
    setenv("DIAL9_BUFFER_KB", "256", 1);
    setenv("DIAL9_MEMORY_BUDGET_MB", "8", 1);
    setenv("DIAL9_SYMBOLIZE_EXIT_WAIT_SECS", "120", 1);
    setenv("DIAL9_ENABLED", "off", 1);
    setenv("DIAL9_CLOCK", "monotonic", 1);
    setenv("DIAL9_SCHEDSTAT_RESOLUTION_US", "0", 1);
    CHECK(d9_config_from_env(&cfg) == 0);
    CHECK_EQ_U64(cfg.schedstat_resolution_us, 0);
    CHECK_STR(cfg.trace_dir, "/tmp/somewhere");
    CHECK_EQ_U64(cfg.max_file_size, 8ull << 20);
    CHECK_EQ_U64(cfg.max_total_size, 100ull << 20);
    CHECK_EQ_U64(cfg.rotation_secs, 0);
    CHECK_EQ_U64(cfg.buffer_kb, 256);
    CHECK_EQ_U64(cfg.memory_budget_mb, 8);
    CHECK_EQ_U64(cfg.symbolize_exit_wait_secs, 120);
    CHECK(!cfg.enabled);
    CHECK(cfg.clock == D9_CLOCK_MONOTONIC);
    unsetenv("DIAL9_TRACE_DIR");
    unsetenv("DIAL9_MAX_FILE_SIZE_MB");
    unsetenv("DIAL9_MAX_DISK_USAGE_MB");
    unsetenv("DIAL9_ROTATION_SECS");
    unsetenv("DIAL9_BUFFER_KB");
    unsetenv("DIAL9_MEMORY_BUDGET_MB");
    unsetenv("DIAL9_SYMBOLIZE_EXIT_WAIT_SECS");
    unsetenv("DIAL9_ENABLED");
    unsetenv("DIAL9_CLOCK");
    unsetenv("DIAL9_SCHEDSTAT_RESOLUTION_US");
    CHECK(d9_config_from_env(&cfg) == 0);
    CHECK_EQ_U64(cfg.schedstat_resolution_us, 1000); /* the default */
    CHECK_EQ_U64(cfg.memory_budget_mb, 64);
    CHECK_EQ_U64(cfg.symbolize_exit_wait_secs, 5);
    CHECK(cfg.thread_cpu_time == D9_THREAD_CPU_TIME_PARK); /* the default: one read per active period */
    const char *cpu_modes[] = {"park", "every", "off"};
    for (int m = 0; m < 3; m++) {
        setenv("DIAL9_THREAD_CPU_TIME", cpu_modes[m], 1);
        CHECK(d9_config_from_env(&cfg) == 0);
        CHECK_EQ_U64(cfg.thread_cpu_time, m);
    }
    unsetenv("DIAL9_THREAD_CPU_TIME");
    cfg.thread_cpu_time = (d9_thread_cpu_time_mode)3;
    CHECK(d9_config_validate(&cfg) == D9_ERR_INVALID);

    expect_env_error("DIAL9_ENABLED", "maybe");
    expect_env_error("DIAL9_MAX_FILE_SIZE_MB", "abc");
    expect_env_error("DIAL9_MAX_FILE_SIZE_MB", "-5");
    expect_env_error("DIAL9_MAX_FILE_SIZE_MB", "0");
    expect_env_error("DIAL9_MAX_FILE_SIZE_MB", "12MB");
    expect_env_error("DIAL9_MAX_DISK_USAGE_MB", "99999999999999999999");
    expect_env_error("DIAL9_ROTATION_SECS", "1.5");
    expect_env_error("DIAL9_BUFFER_KB", "8");
    expect_env_error("DIAL9_MEMORY_BUDGET_MB", "0");
    expect_env_error("DIAL9_MEMORY_BUDGET_MB", "2GB");
    expect_env_error("DIAL9_SYMBOLIZE_EXIT_WAIT_SECS", "3601");
    expect_env_error("DIAL9_SYMBOLIZE_EXIT_WAIT_SECS", "5s");
    expect_env_error("DIAL9_FLUSH_MS", "0");
    expect_env_error("DIAL9_CLOCK", "rdtsc");
    expect_env_error("DIAL9_THREAD_CPU_TIME", "always");
    expect_env_error("DIAL9_THREAD_CPU", "rdtsc"); /* auto, perf or syscall */
    expect_env_error("DIAL9_THREAD_CPU", "");
    expect_env_error("DIAL9_SCHEDSTAT", "2");
    expect_env_error("DIAL9_SCHEDSTAT_RESOLUTION_US", "2000000");
    expect_env_error("DIAL9_SCHEDSTAT_RESOLUTION_US", "fast");
    expect_env_error("DIAL9_SWITCH_STACKS_PER_SEC", "0");
    expect_env_error("DIAL9_SWITCH_STACKS_PER_SEC", "lots");
    for (size_t i = 0; i < sizeof bad_budgets / sizeof bad_budgets[0]; i++)
        expect_env_error("DIAL9_OVERHEAD_BUDGET_PCT", bad_budgets[i]);
    expect_env_error("DIAL9_TRACE_DIR", "");
    expect_env_error("DIAL9_TRACE_CHILDREN", "maybe");
    expect_env_error("DIAL9_ADAPTER_MAX_OBJECTS", "lots");
    expect_env_error("DIAL9_ADAPTER_MAX_OBJECTS", "10");

    /* A trace dir too long to hold runs: the message names the variable and the length (the
     * value itself is shortened). */
    char long_dir[5040];
    memset(long_dir, 'a', sizeof long_dir - 1);
    long_dir[0] = '/';
    long_dir[sizeof long_dir - 1] = 0;
    setenv("DIAL9_TRACE_DIR", long_dir, 1);
    CHECK(d9_config_from_env(&cfg) == -1);
    CHECK(!cfg.enabled);
    CHECK(strstr(d9_last_error(), "DIAL9_TRACE_DIR=\"/aaa") != NULL);
    CHECK(strstr(d9_last_error(), "5039 bytes") != NULL);
    unsetenv("DIAL9_TRACE_DIR");

    /* Inconsistent pair: names both variables. */
    setenv("DIAL9_MAX_FILE_SIZE_MB", "100", 1);
    setenv("DIAL9_MAX_DISK_USAGE_MB", "10", 1);
    CHECK(d9_config_from_env(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "DIAL9_MAX_DISK_USAGE_MB") != NULL);
    CHECK(strstr(d9_last_error(), "DIAL9_MAX_FILE_SIZE_MB") != NULL);
    unsetenv("DIAL9_MAX_FILE_SIZE_MB");
    unsetenv("DIAL9_MAX_DISK_USAGE_MB");
}

/* One rule for every numeric variable (common/plain_number.h): decimal digits, spaces around
 * them allowed, no sign; the S3 client's and uploader's variables are checked with the rest,
 * not replaced by their defaults once uploading starts. */
static const struct {
    const char *var, *good; /* a value in range */
} numeric_vars[] = {
    {"DIAL9_MAX_FILE_SIZE_MB", "8"},          {"DIAL9_MAX_DISK_USAGE_MB", "1024"},
    {"DIAL9_ROTATION_SECS", "60"},            {"DIAL9_BUFFER_KB", "256"},
    {"DIAL9_MEMORY_BUDGET_MB", "8"},          {"DIAL9_FLUSH_MS", "20"},
    {"DIAL9_SCHEDSTAT_RESOLUTION_US", "1000"}, {"DIAL9_CPU_SAMPLE_HZ", "99"},
    {"DIAL9_SWITCH_STACKS_PER_SEC", "500"},   {"DIAL9_SYMBOLIZE_EXIT_WAIT_SECS", "5"},
    {"DIAL9_S3_EXIT_WAIT_SECS", "10"},        {"DIAL9_ADAPTER_MAX_OBJECTS", "4096"},
    {"DIAL9_S3_BREAKER_SECS", "30"},          {"DIAL9_S3_STALL_SECS", "30"},
    {"DIAL9_S3_MULTIPART_THRESHOLD_MB", "16"}, {"DIAL9_S3_PART_SIZE_MB", "8"},
};

static void test_numeric_rule(void) {
    for (size_t i = 0; i < sizeof numeric_vars / sizeof numeric_vars[0]; i++) {
        const char *var = numeric_vars[i].var, *good = numeric_vars[i].good;
        char value[64];
        setenv(var, good, 1);
        d9_config cfg;
        if (d9_config_from_env(&cfg) != 0) {
            fprintf(stderr, "%s=%s refused: %s\n", var, good, d9_last_error());
            CHECK(0);
        }
        snprintf(value, sizeof value, " %s ", good); /* spaces around: taken by every one */
        setenv(var, value, 1);
        if (d9_config_from_env(&cfg) != 0) {
            fprintf(stderr, "%s=\"%s\" refused: %s\n", var, value, d9_last_error());
            CHECK(0);
        }
        unsetenv(var);
        snprintf(value, sizeof value, "+%s", good); /* a sign: refused by every one */
        expect_env_error(var, value);
        snprintf(value, sizeof value, "-%s", good);
        expect_env_error(var, value);
        const char *bad[] = {"NaN", "nan", "inf", "-inf", "1e3", "0x10", "12abc", "", "99999999999999999999999"};
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) expect_env_error(var, bad[k]);
    }
    expect_env_error("DIAL9_S3_BREAKER_SECS", "0");
    expect_env_error("DIAL9_S3_BREAKER_SECS", "3601");
    expect_env_error("DIAL9_S3_STALL_SECS", "0");
    expect_env_error("DIAL9_S3_PART_SIZE_MB", "4"); /* under S3's minimum part */
    expect_env_error("DIAL9_S3_MULTIPART_THRESHOLD_MB", "5121");
    /* the one float variable: plain decimals only */
    const char *bad_pct[] = {"+1", "-0", "1e-1", "0,5", "NaN", "Infinity", "0.0000000000000001"};
    for (size_t k = 0; k < sizeof bad_pct / sizeof bad_pct[0]; k++)
        expect_env_error("DIAL9_OVERHEAD_BUDGET_PCT", bad_pct[k]);
}

/* Service and S3 settings: the message names the variable that holds the bad value (of two
 * that can: the one in use) and the value. */
static void expect_named(const char *var, const char *value, const char *needle) {
    setenv(var, value, 1);
    d9_config cfg;
    CHECK(d9_config_from_env(&cfg) == -1);
    CHECK(!cfg.enabled);
    const char *msg = d9_last_error();
    if (!strstr(msg, var) || !strstr(msg, needle)) {
        fprintf(stderr, "message for %s=%.60s does not name it and \"%s\": %s\n", var, value, needle, msg);
        CHECK(0);
    }
    unsetenv(var);
}

static void test_named_settings(void) {
    char long_name[400];
    memset(long_name, 's', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    expect_named("DIAL9_SERVICE", long_name, "399 bytes");
    expect_named("DIAL9_SERVICE_NAME", long_name, "399 bytes");
    expect_named("DIAL9_S3_BUCKET", "My_Bucket", "\"My_Bucket\"");
    expect_named("DIAL9_S3_BUCKET", "ab", "\"ab\"");
    setenv("DIAL9_S3_BUCKET", "d9-bucket", 1);
    expect_named("AWS_REGION", "US East", "\"US East\"");
    expect_named("AWS_DEFAULT_REGION", "eu_west_1", "\"eu_west_1\"");
    expect_named("AWS_ENDPOINT_URL", "ftp://s3.example", "\"ftp://s3.example\"");
    expect_named("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/some/path", "path after the host");
    expect_named("AWS_ENDPOINT_URL", "http://user@127.0.0.1:9000", "user info");
    char long_prefix[600];
    memset(long_prefix, 'p', sizeof long_prefix - 1);
    long_prefix[sizeof long_prefix - 1] = 0;
    expect_named("DIAL9_S3_PREFIX", long_prefix, "599 bytes");
    /* the same variables, good */
    setenv("AWS_REGION", "eu-west-1", 1);
    setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000", 1);
    setenv("DIAL9_SERVICE", "checkout", 1);
    d9_config cfg;
    CHECK(d9_config_from_env(&cfg) == 0);
    CHECK_STR(cfg.s3_region, "eu-west-1");
    CHECK_STR(cfg.s3_endpoint, "http://127.0.0.1:9000");
    CHECK_STR(cfg.service, "checkout");
    unsetenv("AWS_REGION");
    unsetenv("AWS_ENDPOINT_URL_S3");
    unsetenv("DIAL9_SERVICE");
    unsetenv("DIAL9_S3_BUCKET");
    /* without a bucket S3 is not used: its region is not checked */
    setenv("AWS_REGION", "US East", 1);
    CHECK(d9_config_from_env(&cfg) == 0);
    unsetenv("AWS_REGION");
    /* a field set in code: the message names the field */
    d9_config_init(&cfg);
    cfg.s3_bucket = "Bad_Bucket";
    CHECK(d9_config_validate(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "s3_bucket") && strstr(d9_last_error(), "Bad_Bucket"));
}

static void test_budget(void) {
    d9_config cfg;
    d9_config_init(&cfg);
    CHECK(cfg.overhead_budget_pct == 1.0);
    const struct {
        const char *v;
        double want;
    } good[] = {{"1", 1.0}, {"0.5", 0.5}, {"100", 100}, {"0.01", 0.01}, {"0", 0}, {"off", 0}, {"OFF", 0}, {" 2.5 ", 2.5}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("DIAL9_OVERHEAD_BUDGET_PCT", good[i].v, 1);
        CHECK(d9_config_from_env(&cfg) == 0);
        CHECK(cfg.overhead_budget_pct == good[i].want);
    }
    unsetenv("DIAL9_OVERHEAD_BUDGET_PCT");
    /* the expected range is in the message */
    setenv("DIAL9_OVERHEAD_BUDGET_PCT", "1%", 1);
    CHECK(d9_config_from_env(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "0.01 to 100") != NULL);
    unsetenv("DIAL9_OVERHEAD_BUDGET_PCT");
    d9_config_init(&cfg);
    cfg.overhead_budget_pct = -3;
    CHECK(d9_config_validate(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "overhead_budget_pct") != NULL);
    cfg.overhead_budget_pct = 0;
    CHECK(d9_config_validate(&cfg) == 0);
}

static void test_validate(void) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.max_file_size = 100;
    CHECK(d9_start(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "max_file_size") != NULL);
    d9_config_init(&cfg);
    cfg.buffer_kb = 3;
    CHECK(d9_start(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "buffer_kb") != NULL);
    d9_config_init(&cfg);
    cfg.memory_budget_mb = 0;
    CHECK(d9_start(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "memory_budget_mb") != NULL);
    d9_config_init(&cfg);
    cfg.trace_dir = "";
    CHECK(d9_start(&cfg) == -1);
    CHECK(d9_start(NULL) == -1);
    d9_config_init(&cfg);
    cfg.compress = (d9_compress_mode)(D9_COMPRESS_ZSTD + 1);
    CHECK(d9_config_validate(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "compress") != NULL);
}

/* DIAL9_COMPRESS: auto, gzip, zstd (0.4), none, in any case; anything else names the choices */
static void test_compress_env(void) {
    static const struct { const char *v; d9_compress_mode m; } good[] = {
        {"auto", D9_COMPRESS_AUTO}, {"gzip", D9_COMPRESS_GZIP}, {"zstd", D9_COMPRESS_ZSTD}, {"ZSTD", D9_COMPRESS_ZSTD},
        {"none", D9_COMPRESS_NONE}};
    d9_config cfg;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("DIAL9_COMPRESS", good[i].v, 1);
        CHECK(d9_config_from_env(&cfg) == 0);
        CHECK(cfg.compress == good[i].m);
        CHECK(d9_config_validate(&cfg) == 0);
    }
    unsetenv("DIAL9_COMPRESS");
    expect_env_error("DIAL9_COMPRESS", "zst");
    setenv("DIAL9_COMPRESS", "lz4", 1);
    CHECK(d9_config_from_env(&cfg) == -1);
    CHECK(strstr(d9_last_error(), "expected auto, gzip, zstd or none") != NULL);
    unsetenv("DIAL9_COMPRESS");
}

static void test_lifecycle(void) {
    /* Hooks before any start: harmless. */
    d9_poll_begin(1, D9_HERE);
    d9_poll_end();
    d9_park();
    d9_unpark();
    d9_wake(3);
    d9_stop();
    d9_stop();

    /* A directory that cannot be created: d9_start fails and says where. */
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = "/proc/self/no-such-dir/traces";
    CHECK(d9_start(&cfg) == D9_ERR_TRACE_DIR);
    CHECK(strstr(d9_last_error(), "/proc/self/no-such-dir") != NULL);
    /* ...and the or-disabled variant records nothing but returns 0. */
    CHECK(d9_start_or_disabled(&cfg) == 0);
    d9_poll_begin(1, D9_HERE);
    d9_poll_end();
    d9_stats st;
    d9_get_stats(&st);
    CHECK_EQ_U64(st.events_recorded, 0);

    char *dir = d9t_mkdtemp("lifecycle");
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedule_profile = false; /* exact counts below: hook events only */
    CHECK(d9_start(&cfg) == 0);
    CHECK(d9_start(&cfg) == D9_ERR_ALREADY_STARTED);
    CHECK(strstr(d9_last_error(), "already") != NULL);
    d9_poll_begin(7, D9_HERE);
    d9_poll_end();
    d9_set_enabled(false);
    d9_poll_begin(8, D9_HERE); /* not recorded */
    d9_poll_end();
    d9_set_enabled(true);
    d9_poll_begin(9, D9_HERE);
    d9_poll_end();
    d9_stop();
    d9_stop();
    d9_get_stats(&st);
    CHECK_EQ_U64(st.events_recorded, 4);
    CHECK_EQ_U64(st.events_written, 4);
    CHECK_EQ_U64(st.segments_sealed, 1);
    /* After stop: hooks do nothing, and a restart makes a new run directory. */
    d9_poll_begin(10, D9_HERE);
    char first_run[512];
    snprintf(first_run, sizeof first_run, "%s", d9_run_dir());
    CHECK(d9_start(&cfg) == 0);
    CHECK(strcmp(first_run, d9_run_dir()) != 0);
    d9_stop();
    char path[600];
    snprintf(path, sizeof path, "%s/trace.0.bin", first_run);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size > 0);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    test_env();
    test_validate();
    test_compress_env();
    test_budget();
    test_numeric_rule();
    test_named_settings();
    test_lifecycle();
    return d9t_summary("recorder_config");
}
