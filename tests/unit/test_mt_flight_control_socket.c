/* The control socket and disk-mode dumps (docs/flight-recorder.md), through `dial9 trigger`:
 *  - another user (setpriv to nobody; root only, else skipped saying so) is refused, and no
 *    dump is made;
 *  - the same user gets a dump, printed once its manifest is written; in disk mode its
 *    segments are hard links to the run's sealed files (pinned); the program is idle by then
 *    (2000 polls, then none), so the second dump also shows that an idle recorder's dump ends;
 *  - rotation then deletes those files from the run (a 2 MiB budget and 1 MiB segments while
 *    the program records on): the dump's copies stay whole and decode. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

static int g_go[2]; /* parent -> child: one byte = stop */

static int record(void *arg) {
    ft_env(arg);
    setenv("DIAL9_DUMPS", "1", 1);
    setenv("DIAL9_MAX_FILE_SIZE_MB", "1", 1);
    setenv("DIAL9_MAX_DISK_USAGE_MB", "2", 1);
    setenv("DIAL9_SYMBOLIZE", "0", 1);
    d9_config cfg;
    if (d9_config_from_env(&cfg) != D9_OK || d9_start(&cfg) != D9_OK) return 3;
    d9_worker_begin("flight-test", 0);
    uint64_t task = 1;
    for (; task <= 2000; task++) { /* well within a segment: nothing rotates before 'r' */
        d9_poll_begin(task, D9_HERE);
        d9_poll_end();
    }
    for (;;) {
        char c;
        ssize_t n = read(g_go[0], &c, 1); /* non-blocking: EAGAIN while the parent is busy */
        if (n == 1 && c == 'r') { /* record on until rotation deleted the dump's files from the run */
            for (int i = 0; i < 600000; i++, task++) {
                d9_poll_begin(task, D9_HERE);
                d9_poll_end();
                if (i % 2000 == 0) d9_flush(); /* drained as it goes: no drop, so ~8 MB are written */
            }
            break;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    d9_worker_end();
    d9_stop();
    return 0;
}

/* The child's socket is up once `dial9 trigger` reaches it; until then it says "no flight
 * recorder". Waits for it (no time bound but ctest's). */
static char *trigger(const char *prefix, const char *dial9, pid_t pid, int *rc) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s'%s' trigger --lookback 30 --lookforward 0 --reason 'socket test' %d 2>&1", prefix,
             dial9, (int)pid);
    for (;;) {
        char *out = ft_capture(cmd, rc);
        if (!out || !strstr(out, "has no flight recorder")) return out;
        free(out);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static uint64_t g_polls;
static void count_polls(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (d9t_is(ev, "PollStartEvent")) g_polls++;
}

int main(void) {
    const char *build = getenv("D9_BUILD_DIR");
    if (!build) {
        printf("SKIP: D9_BUILD_DIR not set (run by ctest): dial9 trigger is needed\n");
        return 0;
    }
    char *base = d9t_mkdtemp("flight-socket");
    chmod(base, 0755);
    char dial9[1024], cmd[4096];
    snprintf(dial9, sizeof dial9, "%s/dial9", build);
    CHECK(pipe2(g_go, O_NONBLOCK) == 0);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) _exit(record(base));

    char dumps[600], names[8][256];
    snprintf(dumps, sizeof dumps, "%s/dumps", base);
    int rc;
    bool root = geteuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0;
    if (root) {
        /* a copy nobody may run (the build tree may be out of its reach) */
        char copy[700];
        snprintf(copy, sizeof copy, "%s/dial9-copy", base);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 755 '%s'", dial9, copy, copy);
        CHECK(system(cmd) == 0);
        /* first as ourselves: the socket is up (so the refusal below is the uid's) */
        char *out = trigger("", dial9, child, &rc);
        CHECK_EQ_U64(rc, 0);
        free(out);
        int before = ft_entries(dumps, names, 8);
        out = trigger("setpriv --reuid=65534 --regid=65534 --clear-groups ", copy, child, &rc);
        CHECK_EQ_U64(rc, 1);
        CHECK(out && strstr(out, "permission denied: uid 65534") != NULL);
        printf("as nobody: %s", out ? out : "(nothing)\n");
        free(out);
        CHECK_EQ_U64(ft_entries(dumps, names, 8), before); /* no dump for it */
    } else {
        printf("SKIP (part): not root or no setpriv: another user's refusal not tested\n");
    }

    char *out = trigger("", dial9, child, &rc);
    CHECK_EQ_U64(rc, 0);
    char dir[1024] = "";
    if (out) sscanf(out, "%1023s", dir);
    printf("dump: %s\n", dir);
    free(out);
    char file[1200];
    snprintf(file, sizeof file, "%s/manifest.json", dir);
    char *m = ft_read(file);
    CHECK(m && strstr(m, "\"kind\": \"control\"") && strstr(m, "\"reason\": \"socket test\"") &&
          strstr(m, "\"mode\": \"disk\""));
    free(m);
    char **segs;
    int nsegs = d9t_list_segments(dir, &segs);
    CHECK(nsegs >= 1);
    struct stat st;
    /* pinned: the run's file and the dump's are one (a hard link; the first dump may hold it too) */
    nlink_t links[64] = {0};
    for (int i = 0; i < nsegs && i < 64; i++) {
        CHECK(stat(segs[i], &st) == 0 && st.st_nlink >= 2);
        links[i] = st.st_nlink;
    }

    /* rotation deletes the run's files; the dump keeps them */
    CHECK(write(g_go[1], "r", 1) == 1);
    int status;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < nsegs; i++) {
        CHECK(i >= 64 || (stat(segs[i], &st) == 0 && st.st_nlink == links[i] - 1)); /* the run's name is gone */
        CHECK_EQ_U64(d9t_decode_file(segs[i], count_polls, NULL), D9_DEC_END);
    }
    CHECK(g_polls > 0);
    printf("%d pinned segment(s), %llu polls\n", nsegs, (unsigned long long)g_polls);
    d9t_free_list(segs, nsegs);
    if (d9t_failed == 0) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_control_socket");
}
