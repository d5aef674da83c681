/* A memory-mode crash dump gets its names from its readers (docs/flight-recorder.md, "At a
 * crash"): a child records in memory mode with every allocation it reports sampled (an
 * AllocEvent with the caller's stack each) from a function of its own inside a poll,
 * flight_crash_symbols_marker_fn, then writes to a read-only page (SIGSEGV). The crash handler
 * cannot name addresses, so the dump's segments hold no SymbolTableEntry for the function;
 * `dial9 analyze DUMP` must name it all the same (from this program's binary, still on disk),
 * and leave the names in the segments for the next reader, whom it does not name again. Before,
 * analyze of such a dump showed the function as an address. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ALLOCS 200

static void *g_blocks[ALLOCS];
static volatile char *g_read_only; /* one page, mapped before the fork */

__attribute__((noinline)) void flight_crash_symbols_marker_fn(int n);
__attribute__((noinline)) void flight_crash_symbols_marker_fn(int n) {
    for (int i = 0; i < n && i < ALLOCS; i++) {
        g_blocks[i] = malloc(4096);
        if (g_blocks[i]) (void)d9_heap_sample_alloc(g_blocks[i], 4096); /* each sampled, with this stack */
    }
}

static void record_and_crash(const char *base) {
    ft_env(base);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_MEMORY_PROFILE_ENABLED", "1", 1);
    setenv("DIAL9_MEMORY_SAMPLE_BYTES", "1", 1);
    d9_config cfg;
    if (d9_config_from_env(&cfg) != D9_OK || d9_start(&cfg) != D9_OK) {
        fprintf(stderr, "start: %s\n", d9_last_error());
        _exit(3);
    }
    d9_worker_begin("crash-symbols-test", 0);
    d9_poll_begin(1, D9_HERE);
    flight_crash_symbols_marker_fn(ALLOCS);
    d9_poll_end();
    d9_flush(); /* the allocations are in the open segment: the crash dump's */
    g_read_only[0] = 1; /* a real fault: SIGSEGV from the kernel */
    _exit(4);           /* not reached */
}

static uint64_t g_marker_entries, g_allocs;

static void on_event(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (d9t_is(ev, "AllocEvent")) g_allocs++;
    if (!d9t_is(ev, "SymbolTableEntry")) return;
    d9_dec_str name;
    static const char want[] = "flight_crash_symbols_marker_fn";
    if (d9_value_str(d9_event_field(ev, "symbol_name"), &name) && name.len == sizeof want - 1 &&
        !memcmp(name.ptr, want, name.len))
        g_marker_entries++;
}

static char *analyze(const char *dir, int *rc) {
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "'%s/dial9' analyze '%s' 2>&1", getenv("D9_BUILD_DIR"), dir);
    return ft_capture(cmd, rc);
}

int main(void) {
    if (!getenv("D9_BUILD_DIR")) {
        printf("SKIP: D9_BUILD_DIR is not set (dial9 analyze is the reader tested)\n");
        return 0;
    }
    char *base = d9t_mkdtemp("flight-crash-symbols");
    g_read_only = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(g_read_only != MAP_FAILED);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) record_and_crash(base);
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    /* died of the fault (or a sanitizer's report of it ended it), not at start or after it */
    CHECK(!(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3 || WEXITSTATUS(st) == 4)));

    char path[700], names[8][256];
    snprintf(path, sizeof path, "%s/dumps", base);
    int dumps = ft_entries(path, names, 8);
    CHECK_EQ_U64(dumps, 1);
    if (dumps == 1) {
        char dir[1000], file[1100];
        snprintf(dir, sizeof dir, "%s/%s", path, names[0]);
        CHECK(strstr(names[0], ".crash") != NULL);
        snprintf(file, sizeof file, "%s/manifest.json", dir);
        char *m = ft_read(file);
        CHECK(m && strstr(m, "\"mode\": \"memory\"") != NULL && strstr(m, "\"kind\": \"crash\"") != NULL);
        free(m);

        CHECK_EQ_U64(d9t_decode_run(dir, on_event, NULL), 0);
        CHECK(g_allocs >= ALLOCS);        /* the poll's allocations are in the crash dump */
        CHECK_EQ_U64(g_marker_entries, 0); /* and nothing named them inside the handler */

        int rc;
        char *out = analyze(dir, &rc);
        CHECK(out && rc == 0);
        CHECK(out && strstr(out, "flight_crash_symbols_marker_fn") != NULL); /* the heap's site, named */
        CHECK(out && strstr(out, "addresses from the binaries on disk") != NULL);
        if (out && d9t_failed) printf("%s\n", out);
        free(out);

        g_allocs = g_marker_entries = 0;
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, NULL), 0);
        CHECK(g_marker_entries > 0); /* the names stay in the segments */

        out = analyze(dir, &rc); /* the next reader finds them: nothing to name again */
        CHECK(out && rc == 0);
        CHECK(out && strstr(out, "flight_crash_symbols_marker_fn") != NULL);
        CHECK(out && strstr(out, "addresses from the binaries on disk") == NULL);
        free(out);
    }
    for (int i = 0; i < ALLOCS; i++) free(g_blocks[i]);
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_crash_symbols");
}
