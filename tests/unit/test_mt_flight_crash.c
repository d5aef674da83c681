/* Memory mode's crash dump (docs/flight-recorder.md, core/flight_crash.h): a program records
 * ROUNDS polls in memory mode, drains them (d9_flush) and then crashes. What the recorder held
 * must be on disk as a dump with trigger "crash": every poll once, in segments that decode
 * alone, the manifest last, naming the signal; and the program still dies as it would have:
 *   - a write to a read-only page: killed by SIGSEGV (a sanitizer's own handler, in its builds,
 *     reports and exits instead; a NULL write would be caught by UBSan before any fault);
 *   - the program's own SIGSEGV handler, installed before d9_start, still runs (it _exits 42);
 *   - abort(): killed by SIGABRT.
 * Nothing is in the trace directory (memory mode writes only dumps). */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ROUNDS 100000 /* ~2 MB of events: sealed 1 MiB segments and an open one */

enum how { BY_FAULT, BY_OWN_HANDLER, BY_ABORT };

static volatile char *g_read_only; /* one page, mapped before the fork */

static void own_handler(int sig) {
    (void)sig;
    _exit(42);
}

static void record_and_crash(const char *base, enum how how) {
    ft_env(base);
    setenv("DIAL9_MODE", "memory", 1);
    /* sealed by size only (1 MiB, a quarter of the budget), never by time: whatever the timing,
     * the last drain's bytes are in an open segment and the ones before in sealed ones */
    setenv("DIAL9_FLIGHT_MEMORY_MB", "4", 1);
    setenv("DIAL9_FLIGHT_SEGMENT_MS", "3600000", 1);
    if (how == BY_OWN_HANDLER) signal(SIGSEGV, own_handler);
    if (!ft_start_from_env()) _exit(3);
    d9_worker_begin("crash-test", 0);
    for (int i = 0; i < ROUNDS; i++) {
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        d9_poll_end();
        if (i % 1000 == 0) d9_flush();
    }
    d9_flush(); /* every poll is in the writer now: sealed, or in the open segment */
    if (how == BY_ABORT) abort();
    g_read_only[0] = 1; /* a real fault: SIGSEGV from the kernel */
    _exit(4); /* not reached */
}

typedef struct found {
    uint8_t *seen; /* per task id: PollStartEvents */
    uint64_t polls, twice, out_of_range;
} found;

static void on_event(const d9_event *ev, void *ctx) {
    found *f = ctx;
    if (!d9t_is(ev, "PollStartEvent")) return;
    uint64_t task = d9t_field_u(ev, "task_id");
    f->polls++;
    if (task < 1 || task > ROUNDS) f->out_of_range++;
    else if (f->seen[task]++) f->twice++;
}

static void scenario(enum how how, const char *label) {
    printf("-- %s\n", label);
    char *base = d9t_mkdtemp("flight-crash");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) record_and_crash(base, how);
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    if (how == BY_OWN_HANDLER && !FT_SANITIZED) {
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42); /* the program's handler ran after the dump */
    } else if (how == BY_OWN_HANDLER) { /* ASan may keep SIGSEGV's handler its own */
        CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 42) || (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV));
    } else if (!FT_SANITIZED || how == BY_ABORT) {
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == (how == BY_ABORT ? SIGABRT : SIGSEGV));
    } else {
        CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0)); /* the sanitizer's report ends it */
    }
    printf("child: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));

    char path[512], names[16][256];
    snprintf(path, sizeof path, "%s/traces", base);
    CHECK_EQ_U64(ft_entries(path, names, 16), 0);
    snprintf(path, sizeof path, "%s/dumps", base);
    int dumps = ft_entries(path, names, 16);
    CHECK_EQ_U64(dumps, 1);
    if (dumps == 1) {
        size_t nl = strlen(names[0]);
        CHECK(nl > 6 && !strcmp(names[0] + nl - 6, ".crash"));
        char dir[800], file[1024];
        snprintf(dir, sizeof dir, "%s/dumps/%s", base, names[0]);
        snprintf(file, sizeof file, "%s/manifest.json", dir);
        char *m = ft_read(file);
        CHECK(m != NULL);
        if (m) {
            CHECK(strstr(m, "\"kind\": \"crash\"") != NULL);
            char want[96];
            if (how == BY_ABORT) snprintf(want, sizeof want, "\"event\": \"SIGABRT sent by pid %d\"", (int)pid);
            else snprintf(want, sizeof want, "\"event\": \"SIGSEGV at address %p\"", (void *)g_read_only);
            CHECK(strstr(m, want) != NULL);
            CHECK(strstr(m, "\"mode\": \"memory\"") != NULL);
            CHECK(strstr(m, "\"segments_missing\": 0") != NULL);
            CHECK(strstr(m, "\"open\": true") != NULL); /* the open segment's bytes are there too */
            CHECK(strstr(m, "\"file\": \"trace.1.bin\"") != NULL); /* and at least two sealed ones */
            free(m);
        }
        snprintf(file, sizeof file, "%s/.dial9-dump", dir);
        CHECK(access(file, F_OK) == 0);
        found f = {.seen = calloc(ROUNDS + 1, 1)};
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, &f), 0); /* every segment decodes alone */
        CHECK_EQ_U64(f.polls, ROUNDS);
        CHECK_EQ_U64(f.twice, 0);
        CHECK_EQ_U64(f.out_of_range, 0);
        printf("dump %s: %llu polls of %d\n", names[0], (unsigned long long)f.polls, ROUNDS);
        free(f.seen);
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
}

int main(void) {
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    if (page == MAP_FAILED) return d9t_summary("test_mt_flight_crash");
    g_read_only = page;
    scenario(BY_FAULT, "a write to a read-only page");
    scenario(BY_OWN_HANDLER, "the program's own SIGSEGV handler");
    scenario(BY_ABORT, "abort()");
    return d9t_summary("test_mt_flight_crash");
}
