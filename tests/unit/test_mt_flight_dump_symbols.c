/* A memory-mode dump carries its symbols (docs/flight-recorder.md): a copy of this program
 * records in memory mode with every allocation it reports sampled (DIAL9_MEMORY_SAMPLE_BYTES=1:
 * an AllocEvent with the caller's stack each), from a function of its own,
 * flight_symbols_marker_fn, then asks for a dump and stops. The copy is deleted before anything
 * reads the dump: its names can only come from the dump itself. The dump's segments must hold a
 * SymbolTableEntry naming flight_symbols_marker_fn, its manifest say how many addresses were
 * named, and `dial9 analyze DUMP` name the function in its heap section. Before this, a
 * memory-mode dump had no SymbolTableEntry at all (and the copy gone, nothing could name it). */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ALLOCS 200

static void *g_blocks[ALLOCS];

__attribute__((noinline)) void flight_symbols_marker_fn(int n);
__attribute__((noinline)) void flight_symbols_marker_fn(int n) {
    for (int i = 0; i < n && i < ALLOCS; i++) {
        g_blocks[i] = malloc(4096);
        if (g_blocks[i]) (void)d9_heap_sample_alloc(g_blocks[i], 4096); /* each sampled, with this stack */
    }
}

static int child(const char *base) {
    ft_env(base);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_MEMORY_PROFILE_ENABLED", "1", 1);
    setenv("DIAL9_MEMORY_SAMPLE_BYTES", "1", 1);
    d9_config cfg;
    if (d9_config_from_env(&cfg) != D9_OK || d9_start(&cfg) != D9_OK) {
        fprintf(stderr, "start: %s\n", d9_last_error());
        return 3;
    }
    d9_worker_begin("symbols-test", 0);
    d9_poll_begin(1, D9_HERE);
    flight_symbols_marker_fn(ALLOCS);
    d9_poll_end();
    d9_flush();
    if (d9_dump(60000, 0, "symbols") != D9_OK) return 4;
    d9_worker_end();
    d9_stop(); /* the dump under way ends with what there is */
    for (int i = 0; i < ALLOCS; i++) free(g_blocks[i]); /* in use at the dump: the heap's live set */
    return 0;
}

typedef struct found {
    uint64_t entries, marker, allocs;
} found;

static void on_event(const d9_event *ev, void *ctx) {
    found *f = ctx;
    if (d9t_is(ev, "AllocEvent")) f->allocs++;
    if (!d9t_is(ev, "SymbolTableEntry")) return;
    f->entries++;
    d9_dec_str name;
    static const char want[] = "flight_symbols_marker_fn";
    if (d9_value_str(d9_event_field(ev, "symbol_name"), &name) && name.len == sizeof want - 1 &&
        !memcmp(name.ptr, want, name.len))
        f->marker++;
}

static bool copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t n;
    bool ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0) ok = write(out, buf, (size_t)n) == n;
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0) ok = false;
    return ok;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "child")) return child(argv[2]);
    char *base = d9t_mkdtemp("flight-dump-symbols");
    char copy[600];
    snprintf(copy, sizeof copy, "%s/program-copy", base);
    CHECK(copy_file("/proc/self/exe", copy));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl(copy, copy, "child", base, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(unlink(copy) == 0); /* the binary is gone before anything reads the dump */

    int dumps = 0;
    char dir[1000];
    char *m = ft_first_dump(base, &dumps, dir, sizeof dir);
    CHECK_EQ_U64(dumps, 1);
    if (dumps >= 1) {
        CHECK(m != NULL);
        if (m) {
            CHECK(strstr(m, "\"mode\": \"memory\"") != NULL);
            CHECK(strstr(m, "\"symbols\": \"appended to each segment at the dump: ") != NULL);
            CHECK(strstr(m, "0 segments left without") != NULL);
            if (d9t_failed) printf("%s\n", m);
            free(m);
        }
        found f = {0};
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, &f), 0);
        CHECK(f.allocs >= ALLOCS);
        CHECK(f.entries > 0);
        CHECK(f.marker > 0);
        printf("dump %s: %llu AllocEvents, %llu SymbolTableEntry, %llu naming flight_symbols_marker_fn\n", dir,
               (unsigned long long)f.allocs, (unsigned long long)f.entries, (unsigned long long)f.marker);
        const char *bd = getenv("D9_BUILD_DIR");
        if (bd) {
            char cmd[2400];
            snprintf(cmd, sizeof cmd, "'%s/dial9' analyze '%s' 2>&1", bd, dir);
            int rc;
            char *out = ft_capture(cmd, &rc);
            CHECK(out && rc == 0);
            CHECK(out && strstr(out, "flight_symbols_marker_fn") != NULL); /* the heap's site, named */
            if (out && d9t_failed) printf("%s\n", out);
            free(out);
        } else {
            printf("SKIP the dial9 analyze part: D9_BUILD_DIR is not set\n");
        }
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_dump_symbols");
}
