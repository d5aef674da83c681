/* A disk-mode crash dump right after a rotation (docs/flight-recorder.md, "Crash dumps"): the
 * readers must read it without an error. A program records 3000 polls with the flight
 * recorder on (DIAL9_DUMPS=1), has them sealed by a d9_dump (its manifest waited for: the
 * rotation is done), and crashes while the writer's next segment is open and empty: the file
 * trace.1.bin.active, made here as the writer makes it (openat, O_EXCL, nothing written) since
 * the writer's own window between its openat and its first pwrite (or a write refused: a full
 * disk) is too short to crash in on purpose. The dump must hold every poll once, in the sealed
 * trace.0.bin, leave the empty file out (it has no event to keep), and `dial9 stats` and
 * `dial9 analyze` of it must exit 0. Before, the handler linked the empty file as trace.1.bin:
 * both readers said "empty file: not a dial9 trace" and exited 1. */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ROUNDS 3000

static volatile char *g_read_only; /* one page, mapped before the fork */

static void record_and_crash(const char *base) {
    ft_env(base);
    setenv("DIAL9_DUMPS", "1", 1);
    setenv("DIAL9_SYMBOLIZE", "0", 1);
    if (!ft_start_from_env()) _exit(3);
    d9_worker_begin("crash-empty", 0);
    for (uint64_t i = 1; i <= ROUNDS; i++) {
        d9_poll_begin(i, D9_HERE);
        d9_poll_end();
    }
    d9_flush();
    if (d9_dump(0, 0, "seal the polls") != D9_OK) _exit(5);
    ft_wait_dump_manifest(base);
    /* the writer's next segment, opened and not yet written */
    char active[2048];
    snprintf(active, sizeof active, "%s/trace.1.bin.active", d9_run_dir());
    int fd = open(active, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) _exit(6);
    close(fd);
    g_read_only[0] = 1; /* a real fault: SIGSEGV from the kernel */
    _exit(4);           /* not reached */
}

static void on_event(const d9_event *ev, void *ctx) {
    uint8_t *seen = ctx;
    if (!d9t_is(ev, "PollStartEvent")) return;
    uint64_t task = d9t_field_u(ev, "task_id");
    if (task >= 1 && task <= ROUNDS) seen[task]++;
    else seen[0]++;
}

static int reader(const char *cmd, const char *dir) {
    char line[2400];
    snprintf(line, sizeof line, "'%s/dial9' %s '%s' 2>&1", getenv("D9_BUILD_DIR"), cmd, dir);
    int rc = -1;
    char *out = ft_capture(line, &rc);
    printf("dial9 %s DUMP: exit %d\n", cmd, rc);
    if (rc != 0 && out) printf("%s\n", out);
    free(out);
    return rc;
}

int main(void) {
    if (!getenv("D9_BUILD_DIR")) {
        printf("SKIP: D9_BUILD_DIR is not set (dial9 stats and analyze are the readers tested)\n");
        return d9t_summary("test_mt_flight_disk_crash_empty");
    }
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    if (page == MAP_FAILED) return d9t_summary("test_mt_flight_disk_crash_empty");
    g_read_only = page;

    char *base = d9t_mkdtemp("flight-disk-crash-empty");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) record_and_crash(base);
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    if (!FT_SANITIZED) CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    else CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0)); /* the sanitizer's report ends it */

    char path[512], names[16][256], dir[800] = "";
    snprintf(path, sizeof path, "%s/dumps", base);
    int dumps = ft_entries(path, names, 16);
    CHECK_EQ_U64(dumps, 2); /* the sealing dump and the crash's */
    for (int i = 0; i < dumps && i < 16; i++) {
        size_t nl = strlen(names[i]);
        if (nl > 6 && !strcmp(names[i] + nl - 6, ".crash")) snprintf(dir, sizeof dir, "%s/%s", path, names[i]);
    }
    CHECK(dir[0] != 0);
    if (dir[0]) {
        char file[1024];
        snprintf(file, sizeof file, "%s/manifest.json", dir);
        char *m = ft_read(file);
        CHECK(m != NULL);
        CHECK(m && strstr(m, "\"mode\": \"disk\"") != NULL);
        CHECK(m && strstr(m, "\"segments_missing\": 0") != NULL);
        CHECK(m && strstr(m, "\"file\": \"trace.0.bin\"") != NULL);
        CHECK(m && strstr(m, "\"file\": \"trace.1.bin\"") == NULL); /* the empty one: left out */
        if (d9t_failed && m) printf("%s\n", m);
        free(m);
        snprintf(file, sizeof file, "%s/trace.1.bin", dir);
        CHECK(access(file, F_OK) != 0);

        uint8_t *seen = calloc(ROUNDS + 1, 1);
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, seen), 0);
        int once = 0;
        for (int t = 1; t <= ROUNDS; t++) once += seen[t] == 1;
        CHECK_EQ_U64(once, ROUNDS); /* nothing lost: every poll, once */
        CHECK_EQ_U64(seen[0], 0);
        free(seen);

        CHECK_EQ_U64(reader("stats", dir), 0);
        CHECK_EQ_U64(reader("analyze", dir), 0);
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_disk_crash_empty");
}
