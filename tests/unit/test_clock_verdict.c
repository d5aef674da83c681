/* auto's clock verdict kept in the trace directory (core/clock_verdict.h): written and read
 * back, refused from another boot, cut short, malformed or missing; and a recorder started with
 * DIAL9_CLOCK=auto beside a planted verdict of this boot takes it instead of running the
 * cross-CPU check (the reason says so), whichever clock the verdict names. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/clock.h"
#include "core/clock_verdict.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

static void put_file(const char *dir, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/" D9_CLOCK_VERDICT_FILE, dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd < 0) return;
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

static void file_round_trip(void) {
    char *dir = d9t_mkdtemp("verdict");
    bool tsc = false;
    char reason[256];
    CHECK(!d9_clock_verdict_load(dir, "boot-a", &tsc, reason, sizeof reason)); /* none yet */
    CHECK(d9_clock_verdict_store(dir, "boot-a", true, "auto: kvm-clock, check passed"));
    CHECK(d9_clock_verdict_load(dir, "boot-a", &tsc, reason, sizeof reason));
    CHECK(tsc);
    CHECK_STR(reason, "auto: kvm-clock, check passed");
    CHECK(!d9_clock_verdict_load(dir, "boot-b", &tsc, reason, sizeof reason)); /* another boot's */
    CHECK(!d9_clock_verdict_load(dir, "boot-", &tsc, reason, sizeof reason));  /* a prefix of it */
    CHECK(d9_clock_verdict_store(dir, "boot-b", false, "auto: check unfinished"));
    tsc = true;
    CHECK(d9_clock_verdict_load(dir, "boot-b", &tsc, reason, sizeof reason));
    CHECK(!tsc);
    CHECK_STR(reason, "auto: check unfinished");
    /* damaged files are not a verdict */
    put_file(dir, "dial9-clock 1 boot-b tsc cut short");
    CHECK(!d9_clock_verdict_load(dir, "boot-b", &tsc, reason, sizeof reason));
    put_file(dir, "dial9-clock 1 boot-b sundial why\n");
    CHECK(!d9_clock_verdict_load(dir, "boot-b", &tsc, reason, sizeof reason));
    put_file(dir, "dial9-clock 2 boot-b tsc a later format\n");
    CHECK(!d9_clock_verdict_load(dir, "boot-b", &tsc, reason, sizeof reason));
    put_file(dir, "");
    CHECK(!d9_clock_verdict_load(dir, "boot-b", &tsc, reason, sizeof reason));
    /* what cannot be written is refused, nothing else */
    CHECK(!d9_clock_verdict_store("/nonexistent/dial9", "boot-a", true, "x"));
    CHECK(!d9_clock_verdict_store(dir, "boot a", true, "x"));
    CHECK(!d9_clock_verdict_store(dir, "boot-a", true, "two\nlines"));
    char id[64];
    CHECK(d9_clock_boot_id(id, sizeof id) && strlen(id) >= 32);
    d9t_rm_rf(dir);
    free(dir);
}

/* In a child (a fresh process: auto not decided yet): the planted verdict of this boot is taken. */
static void recorder_takes_planted(bool plant_tsc) {
    char *dir = d9t_mkdtemp("verdictrec");
    char id[64], line[256];
    CHECK(d9_clock_boot_id(id, sizeof id));
    snprintf(line, sizeof line, "dial9-clock 1 %s %s planted by the test\n", id, plant_tsc ? "tsc" : "monotonic");
    put_file(dir, line);
    pid_t pid = fork();
    if (pid == 0) {
        d9_config cfg;
        d9_config_init(&cfg);
        cfg.trace_dir = dir;
        cfg.clock = D9_CLOCK_AUTO;
        cfg.cpu_profile = false;
        cfg.schedule_profile = false;
        int ok = d9_start(&cfg) == 0;
        ok = ok && strstr(d9_clock_reason(), "planted by the test") != NULL &&
             strstr(d9_clock_reason(), D9_CLOCK_VERDICT_FILE) != NULL;
        ok = ok && d9_clock_use_tsc == plant_tsc;
        if (!ok) fprintf(stderr, "reason: %s, tsc %d\n", d9_clock_reason(), d9_clock_use_tsc);
        d9_stop();
        _exit(ok ? 0 : 1);
    }
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    file_round_trip();
    recorder_takes_planted(false);
    recorder_takes_planted(true);
    return d9t_summary("test_clock_verdict");
}
