/* Caller-allocated public structs across versions (docs/abi.md): a program compiled with an
 * older, shorter d9_config or d9_stats is read and written only within its struct, and gets
 * the defaults for the fields it does not have; one compiled with a newer, longer struct is
 * refused only when it sets options this library does not know. Simulated by passing sizes
 * smaller and larger than sizeof; the short structs live in buffers of exactly their size,
 * so ASan reports any access past them, and a non-ASan build sees garbage placed after them. */
#include <stddef.h>

/* Accessing the fields of a deliberately short struct is what this test is about. */
#pragma GCC diagnostic ignored "-Warray-bounds"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#include "check.h"
#include "core/config_abi.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

/* An "older header": its d9_config ends before the S3 fields. */
#define OLD_CONFIG_SIZE offsetof(d9_config, s3_bucket)
/* An "older header": its d9_stats ends after write_errors. */
#define OLD_STATS_SIZE offsetof(d9_stats, segments_sealed)

static void test_init_writes_only_the_callers_bytes(void) {
    d9_config *old = malloc(OLD_CONFIG_SIZE); /* ASan: an overflowing write is reported */
    d9_config_init_size(old, OLD_CONFIG_SIZE);
    CHECK_EQ_U64(old->struct_size, OLD_CONFIG_SIZE);
    CHECK(old->enabled);
    CHECK_STR(old->trace_dir, "/tmp/dial9-traces");
    CHECK_EQ_U64(old->buffer_kb, 1024);
    free(old);

    /* Without ASan: bytes after the caller's struct stay as they were. */
    _Alignas(8) unsigned char buf[sizeof(d9_config) + 64];
    memset(buf, 0xA5, sizeof buf);
    d9_config_init_size((d9_config *)buf, OLD_CONFIG_SIZE);
    size_t untouched = 0;
    for (size_t i = OLD_CONFIG_SIZE; i < sizeof buf; i++) untouched += buf[i] == 0xA5;
    CHECK_EQ_U64(untouched, sizeof buf - OLD_CONFIG_SIZE);
}

static void test_old_config_gets_defaults_for_missing_fields(void) {
    /* The caller's struct followed by garbage where the newer fields would be: had the library
     * read past struct_size it would see a wild s3_bucket pointer and an s3_path_style of
     * 0xA5A5A5A5. */
    _Alignas(8) unsigned char buf[sizeof(d9_config) + 64];
    memset(buf, 0xA5, sizeof buf);
    d9_config *old = (d9_config *)buf;
    d9_config_init_size(old, OLD_CONFIG_SIZE);
    old->service = "old-caller";
    d9_config full;
    CHECK(d9_config_from_caller(old, &full) == D9_OK);
    CHECK_EQ_U64(full.struct_size, sizeof(d9_config));
    CHECK_STR(full.service, "old-caller");
    CHECK(full.s3_bucket == NULL);
    CHECK_STR(full.s3_prefix, "dial9-traces");
    CHECK_STR(full.s3_region, "us-east-1");
    CHECK(full.s3_endpoint == NULL);
    CHECK(full.s3_path_style == -1);
    CHECK_EQ_U64(full.s3_exit_wait_secs, 10);
    CHECK_EQ_U64(full.symbolize_exit_wait_secs, 5);
    CHECK(d9_config_validate(old) == D9_OK);

    /* d9_start with it, from a buffer of exactly its size (ASan: no over-read). */
    char *dir = d9t_mkdtemp("api-old-config");
    d9_config *exact = malloc(OLD_CONFIG_SIZE);
    d9_config_init_size(exact, OLD_CONFIG_SIZE);
    exact->trace_dir = dir;
    exact->schedule_profile = false;
    CHECK(d9_start(exact) == D9_OK);
    free(exact); /* d9_start copied it */
    d9_poll_begin(1, D9_HERE);
    d9_poll_end();
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    CHECK_EQ_U64(st.events_written, 2);
    d9t_rm_rf(dir);
    free(dir);
}

static void test_old_config_from_env(void) {
    setenv("DIAL9_BUFFER_KB", "128", 1);
    setenv("DIAL9_S3_EXIT_WAIT_SECS", "7", 1); /* a field this caller does not have */
    d9_config *old = malloc(OLD_CONFIG_SIZE);
    CHECK(d9_config_from_env_size(old, OLD_CONFIG_SIZE) == D9_OK);
    CHECK_EQ_U64(old->struct_size, OLD_CONFIG_SIZE);
    CHECK_EQ_U64(old->buffer_kb, 128);
    CHECK(old->enabled);
    free(old);

    setenv("DIAL9_BUFFER_KB", "3", 1); /* bad: the short struct is left disabled */
    old = malloc(OLD_CONFIG_SIZE);
    CHECK(d9_config_from_env_size(old, OLD_CONFIG_SIZE) == D9_ERR_INVALID);
    CHECK(!old->enabled);
    CHECK(strstr(d9_last_error(), "DIAL9_BUFFER_KB") != NULL);
    free(old);
    unsetenv("DIAL9_BUFFER_KB");
    unsetenv("DIAL9_S3_EXIT_WAIT_SECS");
}

static void test_newer_config(void) {
    /* A newer header: fields after ours. Unset (zero, as d9_config_init leaves them) they are
     * fine; set, they are refused, since this library would silently ignore them. */
    size_t newer = sizeof(d9_config) + 16;
    d9_config *cfg = malloc(newer);
    d9_config_init_size(cfg, newer);
    CHECK_EQ_U64(cfg->struct_size, newer);
    unsigned char *tail = (unsigned char *)cfg + sizeof(d9_config);
    size_t zeros = 0;
    for (size_t i = 0; i < 16; i++) zeros += tail[i] == 0;
    CHECK_EQ_U64(zeros, 16);
    CHECK(d9_config_validate(cfg) == D9_OK);
    tail[3] = 1;
    CHECK(d9_config_validate(cfg) == D9_ERR_INVALID);
    CHECK(strstr(d9_last_error(), "unknown to this library") != NULL);
    CHECK(d9_start(cfg) == D9_ERR_INVALID);
    free(cfg);
}

static void test_bad_struct_size(void) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.struct_size = 0; /* e.g. memset instead of d9_config_init */
    CHECK(d9_config_validate(&cfg) == D9_ERR_INVALID);
    CHECK(strstr(d9_last_error(), "struct_size = 0") != NULL);
    CHECK(d9_start(&cfg) == D9_ERR_INVALID);
    cfg.struct_size = 13; /* not a multiple of the struct's alignment */
    CHECK(d9_config_validate(&cfg) == D9_ERR_INVALID);
    cfg.struct_size = 1u << 30;
    CHECK(d9_config_validate(&cfg) == D9_ERR_INVALID);
    CHECK(d9_config_validate(NULL) == D9_ERR_INVALID);
}

static void test_stats_sizes(void) {
    char *dir = d9t_mkdtemp("api-stats");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedule_profile = false;
    CHECK(d9_start(&cfg) == D9_OK);
    d9_poll_begin(1, D9_HERE);
    d9_poll_end();
    d9_stop();

    d9_stats *old = malloc(OLD_STATS_SIZE); /* ASan: an overflowing write is reported */
    d9_get_stats_size(old, OLD_STATS_SIZE);
    CHECK_EQ_U64(old->events_recorded, 2);
    CHECK_EQ_U64(old->events_written, 2);
    free(old);

    _Alignas(8) unsigned char buf[sizeof(d9_stats) + 32];
    memset(buf, 0xA5, sizeof buf);
    d9_get_stats_size((d9_stats *)buf, OLD_STATS_SIZE);
    size_t untouched = 0;
    for (size_t i = OLD_STATS_SIZE; i < sizeof buf; i++) untouched += buf[i] == 0xA5;
    CHECK_EQ_U64(untouched, sizeof buf - OLD_STATS_SIZE);

    /* A newer, longer d9_stats: its counters unknown here read as zero. */
    memset(buf, 0xA5, sizeof buf);
    d9_get_stats_size((d9_stats *)buf, sizeof buf);
    CHECK_EQ_U64(((d9_stats *)buf)->segments_sealed, 1);
    size_t zeros = 0;
    for (size_t i = sizeof(d9_stats); i < sizeof buf; i++) zeros += buf[i] == 0;
    CHECK_EQ_U64(zeros, sizeof buf - sizeof(d9_stats));
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    test_init_writes_only_the_callers_bytes();
    test_old_config_gets_defaults_for_missing_fields();
    test_old_config_from_env();
    test_newer_config();
    test_bad_struct_size();
    test_stats_sizes();
    return d9t_summary("api_struct_sizes");
}
