/* Error codes (dial9.h, d9_error): a caller tells one failure from another by the code, not
 * by parsing d9_last_error(): a bad value, "already started", a trace directory that cannot
 * be created or written, hand-over before any run. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

static void test_strerror(void) {
    const int codes[] = {D9_OK, D9_ERR_INVALID, D9_ERR_ALREADY_STARTED, D9_ERR_TRACE_DIR,
                         D9_ERR_NO_MEMORY, D9_ERR_THREAD, D9_ERR_NOT_STARTED, D9_ERR_SYSTEM};
    size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++) {
        const char *s = d9_strerror(codes[i]);
        CHECK(s != NULL && *s);
        CHECK(strcmp(s, "unknown error") != 0);
        for (size_t j = 0; j < i; j++) CHECK(strcmp(s, d9_strerror(codes[j])) != 0); /* all distinct */
    }
    CHECK_STR(d9_strerror(-1000), "unknown error");
    CHECK_STR(d9_strerror(5), "unknown error");
}

static void test_hand_over_before_any_run(void) {
    CHECK(d9_hand_over_files((unsigned)getuid(), (unsigned)getgid()) == D9_ERR_NOT_STARTED);
}

static void test_invalid(void) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.buffer_kb = 3;
    CHECK(d9_start(&cfg) == D9_ERR_INVALID);
    CHECK(d9_start(NULL) == D9_ERR_INVALID);
    setenv("DIAL9_FLUSH_MS", "0", 1);
    CHECK(d9_config_from_env(&cfg) == D9_ERR_INVALID);
    unsetenv("DIAL9_FLUSH_MS");
}

static void expect_trace_dir_error(const char *trace_dir) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = trace_dir;
    int rc = d9_start(&cfg);
    if (rc != D9_ERR_TRACE_DIR) {
        fprintf(stderr, "trace_dir %s: got %d (%s: %s)\n", trace_dir, rc, d9_strerror(rc), d9_last_error());
        CHECK(0);
        if (rc == D9_OK) d9_stop();
        return;
    }
    CHECK(strstr(d9_last_error(), trace_dir) != NULL); /* the details name the path */
}

static void test_trace_dir_not_writable(void) {
    char *dir = d9t_mkdtemp("api-errors");
    expect_trace_dir_error("/proc/self/no-such-dir/traces"); /* cannot be created */

    char file[512]; /* a regular file where the directory should be */
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    expect_trace_dir_error(file);

    /* A directory without write permission: only meaningful when not root. */
    char ro[512];
    snprintf(ro, sizeof ro, "%s/read-only", dir);
    CHECK(mkdir(ro, 0555) == 0);
    if (geteuid() != 0) expect_trace_dir_error(ro);
    else printf("root: a 0555 directory is writable, that case is skipped\n");
    d9t_rm_rf(dir);
    free(dir);
}

static void test_already_started(void) {
    char *dir = d9t_mkdtemp("api-already");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == D9_OK);
    int rc = d9_start(&cfg);
    CHECK(rc == D9_ERR_ALREADY_STARTED);
    CHECK_STR(d9_strerror(rc), "already recording");
    /* d9_start_or_disabled says the recording goes on (it said "recording disabled", which a
     * program run under dial9 run printed while the shim recorded it) */
    char said[512];
    snprintf(said, sizeof said, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2), out = open(said, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && out >= 0 && dup2(out, 2) == 2);
    CHECK(d9_start_or_disabled(&cfg) == 0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(out);
    char text[512] = "";
    FILE *f = fopen(said, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    CHECK(strstr(text, "dial9: already recording") == text);
    CHECK(strstr(text, "recording goes on") != NULL && strstr(text, "disabled") == NULL);
    CHECK(d9_hand_over_files((unsigned)getuid(), (unsigned)-1) == D9_OK);
    d9_stop();
    CHECK(d9_start(&cfg) == D9_OK); /* after a stop, a start works again */
    d9_stop();
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    test_strerror();
    test_hand_over_before_any_run();
    test_invalid();
    test_trace_dir_not_writable();
    test_already_started();
    return d9t_summary("api_error_codes");
}
