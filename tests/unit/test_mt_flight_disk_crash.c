/* Disk mode's crash dump (docs/flight-recorder.md, core/flight_crash.h): a program records
 * ROUNDS polls in disk mode with the flight recorder on (DIAL9_DUMPS=1), 1 MiB segments, drains
 * them (d9_flush) and then writes to a read-only page. The dump {run}.crash must hold every
 * poll once: the sealed files and the one being written (trace.N.bin.active in the run, up to
 * the last drain), each a hard link to the run's file (the same inode: pinned, no bytes
 * copied), the manifest last with mode "disk", the signal and the fault's address; and the
 * program still dies of its SIGSEGV. A second run with a 1 s look-back: 1000 polls, a d9_dump
 * whose seal closes trace.0.bin (waited for: its manifest), 1.5 s of nothing (a sleep only
 * widens the gap), 1000 more polls, the crash: the dump holds the second thousand whole and
 * nothing of the first (its file ended before the window). Before this, disk mode's crash left
 * only trace.N.bin.active in the run. */
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ROUNDS 100000 /* ~2 MB of events: sealed 1 MiB segments and an open one */

static volatile char *g_read_only; /* one page, mapped before the fork */

static void polls(uint64_t first, uint64_t count) {
    for (uint64_t i = first; i < first + count; i++) {
        d9_poll_begin(i + 1, D9_HERE);
        d9_poll_end();
        if (i % 1000 == 0) d9_flush();
    }
    d9_flush();
}

/* short_lookback: a thousand polls, their segment sealed by a dump, 1.5 s of nothing, a
 * thousand more, with a 1 s look-back: the first thousand's segment ends before the window. */
static void record_and_crash(const char *base, bool short_lookback) {
    ft_env(base);
    setenv("DIAL9_DUMPS", "1", 1);
    setenv("DIAL9_MAX_FILE_SIZE_MB", "1", 1);
    setenv("DIAL9_SYMBOLIZE", "0", 1);
    if (short_lookback) {
        setenv("DIAL9_DUMP_LOOKBACK_SECS", "1", 1);
    }
    if (!ft_start_from_env()) _exit(3);
    d9_worker_begin("crash-test", 0);
    if (short_lookback) {
        polls(0, 1000);
        if (d9_dump(0, 0, "seal the first thousand") != D9_OK) _exit(5);
        ft_wait_dump_manifest(base);
        struct timespec pause = {1, 500000000}; /* longer than the look-back: a gap, not a bound */
        nanosleep(&pause, NULL);
        polls(1000, 1000);
    } else {
        polls(0, ROUNDS);
    }
    g_read_only[0] = 1; /* a real fault: SIGSEGV from the kernel */
    _exit(4);           /* not reached */
}

typedef struct found {
    uint8_t *seen; /* per task id: PollStartEvents */
    uint64_t polls, twice, out_of_range, lowest;
} found;

static void on_event(const d9_event *ev, void *ctx) {
    found *f = ctx;
    if (!d9t_is(ev, "PollStartEvent")) return;
    uint64_t task = d9t_field_u(ev, "task_id");
    f->polls++;
    if (task < f->lowest) f->lowest = task;
    if (task < 1 || task > ROUNDS) f->out_of_range++;
    else if (f->seen[task]++) f->twice++;
}

/* Every trace.N.bin of the dump is the run's file of the same N (sealed or .active). */
static void check_links(const char *dump, const char *run, bool *saw_active) {
    char names[64][256];
    int n = ft_entries(dump, names, 64);
    for (int i = 0; i < n && i < 64; i++) {
        uint64_t seq;
        if (sscanf(names[i], "trace.%" SCNu64 ".bin", &seq) != 1) continue;
        char a[20000], b[20000];
        struct stat sa, sb;
        snprintf(a, sizeof a, "%s/%s", dump, names[i]);
        snprintf(b, sizeof b, "%s/trace.%" PRIu64 ".bin", run, seq);
        bool sealed = stat(b, &sb) == 0;
        if (!sealed) {
            snprintf(b, sizeof b, "%s/trace.%" PRIu64 ".bin.active", run, seq);
            if (stat(b, &sb) == 0) *saw_active = true;
            else printf("%s: no such file in the run\n", names[i]);
        }
        CHECK(stat(a, &sa) == 0 && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev);
    }
}

static void scenario(bool short_lookback) {
    printf("-- %s\n", short_lookback ? "a 1 s look-back, the first thousand 1.5 s older" : "everything in the look-back");
    char *base = d9t_mkdtemp("flight-disk-crash");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) record_and_crash(base, short_lookback);
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    if (!FT_SANITIZED) CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    else CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0)); /* the sanitizer's report ends it */

    char path[512], names[16][256];
    snprintf(path, sizeof path, "%s/traces", base);
    int runs = ft_entries(path, names, 16);
    char run[5000] = "";
    for (int i = 0; i < runs && i < 16; i++)
        if (names[i][0] != '.') snprintf(run, sizeof run, "%s/%s", path, names[i]);
    CHECK(run[0] != 0);
    snprintf(path, sizeof path, "%s/dumps", base);
    int dumps = ft_entries(path, names, 16), crash = -1;
    CHECK_EQ_U64(dumps, short_lookback ? 2 : 1); /* and the dump that sealed the first thousand */
    for (int i = 0; i < dumps && i < 16; i++) {
        size_t nl = strlen(names[i]);
        if (nl > 6 && !strcmp(names[i] + nl - 6, ".crash")) crash = i;
    }
    CHECK(crash >= 0);
    if (crash >= 0 && run[0]) {
        char dir[800], file[1024];
        snprintf(dir, sizeof dir, "%s/%s", path, names[crash]);
        snprintf(file, sizeof file, "%s/manifest.json", dir);
        char *m = ft_read(file);
        CHECK(m != NULL);
        if (m) {
            char want[96];
            snprintf(want, sizeof want, "\"event\": \"SIGSEGV at address %p\"", (void *)g_read_only);
            CHECK(strstr(m, "\"kind\": \"crash\"") != NULL);
            CHECK(strstr(m, want) != NULL);
            CHECK(strstr(m, "\"mode\": \"disk\"") != NULL);
            CHECK(strstr(m, "\"segments_missing\": 0") != NULL);
            CHECK(strstr(m, "\"open\": true") != NULL); /* the file being written is there too */
            if (short_lookback) {
                CHECK(strstr(m, "\"lookback_ms\": 1000,") != NULL);
                CHECK(strstr(m, "\"file\": \"trace.0.bin\"") == NULL); /* sealed before the window */
            } else {
                CHECK(strstr(m, "\"file\": \"trace.1.bin\"") != NULL); /* at least two sealed ones */
                CHECK(strstr(m, "\"lookback_why\": \"the recording started later\"") != NULL);
            }
            if (d9t_failed) printf("%s\n", m);
            free(m);
        }
        bool saw_active = false;
        check_links(dir, run, &saw_active);
        CHECK(saw_active); /* the run still has trace.N.bin.active: the dump links the same file */
        found f = {.seen = calloc(ROUNDS + 1, 1), .lowest = UINT64_MAX};
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, &f), 0); /* every segment decodes alone */
        CHECK_EQ_U64(f.twice, 0);
        CHECK_EQ_U64(f.out_of_range, 0);
        if (short_lookback) {
            CHECK(f.polls >= 1000); /* the second half whole */
            for (uint64_t t = 1001; t <= 2000; t++) CHECK(f.seen[t] == 1);
            CHECK(f.lowest > 1000); /* and nothing of the first */
        } else {
            CHECK_EQ_U64(f.polls, ROUNDS);
        }
        printf("dump %s: %llu polls (lowest task %llu)\n", names[crash], (unsigned long long)f.polls,
               (unsigned long long)f.lowest);
        free(f.seen);
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
}

int main(void) {
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    if (page == MAP_FAILED) return d9t_summary("test_mt_flight_disk_crash");
    g_read_only = page;
    scenario(false);
    scenario(true);
    return d9t_summary("test_mt_flight_disk_crash");
}
