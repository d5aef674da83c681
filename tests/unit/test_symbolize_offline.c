/* `dial9 symbolize` after the recording process is gone.
 *
 * This program copies itself to a temporary bin/d9rec and runs that copy with `--record DIR`:
 * the child records CPU samples whose callchains hold known functions (of the program, with
 * an inlined call, and of libc) and an address in the page padding after the code that no
 * symbol covers, symbolizes them in-process (the pipeline) and keeps a raw copy of every
 * sealed segment. Then, with the child gone:
 *  - `dial9 symbolize` on the raw copies (in place) and `-o` on a copy in another directory
 *    give the same names as the in-process pass; -o leaves its inputs unchanged; a second run
 *    appends nothing; the padding address is "d9rec+0x..." everywhere;
 *  - with bin/d9rec deleted, its addresses become "d9rec+0x<file offset>" (libc's keep their
 *    names), and `--debug-dir` pointing at a copy of the binary brings the names back;
 *  - with libdw: file:line for the functions and the inlined frame.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/collector.h"
#include "core/source.h"
#include "dial9/dial9.h"
#include "sinks/pipeline.h"
#include "sources/memory_map.h"
#include "symbols/symbolize_report.h"
#include "trace_files_util.h"

/* ------------------------------------------------------------------ the recording child */

__attribute__((noinline)) static uint64_t d9t_capture_return(void) {
    return (uint64_t)(uintptr_t)__builtin_return_address(0);
}
static inline __attribute__((always_inline)) uint64_t d9t_inlined_helper(void) {
    return d9t_capture_return() + 0;
}
__attribute__((noinline)) uint64_t d9t_offline_outer(void);
__attribute__((noinline)) uint64_t d9t_offline_outer(void) {
    uint64_t ra = d9t_inlined_helper();
    __asm__ volatile("" ::: "memory");
    return ra;
}
__attribute__((noinline)) static int d9t_offline_leaf(int x) {
    __asm__ volatile("" ::: "memory");
    return x * 7;
}

typedef struct fake {
    d9_source base;
    uint64_t frames[8];
    uint32_t n;
} fake;

static void fake_collect(d9_source *src, d9_src_batch *out) {
    fake *f = src->ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    for (int i = 0; i < 20; i++) {
        d9_src_event ev = {.ts_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (uint64_t)i,
                           .kind = D9_SRC_CPU_SAMPLE, .tid = 1, .cpu = -1};
        ev.sample.nframes = f->n;
        ev.sample.frames = f->frames;
        d9_src_batch_add(out, &ev);
    }
}
static void fake_close(d9_source *src) { (void)src; }

typedef struct sealed_ctx {
    d9_pipeline *pipe;
    const char *raw_dir;
    int with_stacks; /* segments the writer said hold stacks */
} sealed_ctx;

/* Keep the segment as sealed (before the pipeline appends to it), then hand it on. */
static void on_sealed(const char *path, bool needs_symbols, d9_sym_input *symbols, void *p) {
    sealed_ctx *c = p;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/'", path, c->raw_dir);
    if (system(cmd) != 0) fprintf(stderr, "copy failed: %s\n", cmd);
    if (needs_symbols) c->with_stacks++;
    d9_pipeline_on_sealed(path, needs_symbols, symbols, c->pipe);
}

/* The exec mapping of this program: the last byte is page padding after the code. */
static uint64_t padding_address(void) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    uint64_t end = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 && perms[2] == 'x' && strstr(line, exe)) end = b;
    }
    if (f) fclose(f);
    return end - 1;
}

static int record(const char *dir) {
    char raw[1024];
    snprintf(raw, sizeof raw, "%s/raw", dir);
    mkdir(raw, 0755);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.max_file_size = 8192;
    d9_collector_config cc = {.cfg = &cfg, .run_id = "run1", .service = "offline", .clock_name = "monotonic"};
    char err[512];
    d9_collector *col = d9_collector_open(&cc, err, sizeof err);
    if (!col) return 2;
    sealed_ctx sc = {.pipe = d9_pipeline_start(&cfg), .raw_dir = raw};
    d9_collector_set_on_sealed(col, on_sealed, &sc);
    d9_memory_map_source_start(&cfg, col);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    fake f = {.base = {.name = "fake", .collect = fake_collect, .close = fake_close}};
    f.base.ctx = &f;
    uint64_t frames[] = {
        (uint64_t)(uintptr_t)&d9t_offline_leaf + 2, /* leaf: an interrupted instruction */
        d9t_offline_outer(),                        /* return address inside the inlined helper */
        (uint64_t)(uintptr_t)dlsym(libc, "qsort") + 5,
        (uint64_t)(uintptr_t)dlsym(libc, "fopen") + 3,
        padding_address(),
    };
    memcpy(f.frames, frames, sizeof frames);
    f.n = 5;
    d9_collector_add_source(col, &f.base);
    if (d9_collector_start(col, err, sizeof err) != 0) return 3;
    for (int i = 0; i < 30; i++) d9_collector_drain(col);
    d9_collector_close(col, NULL);
    d9_pipeline_stop(sc.pipe);
    d9_symbolize_report rep;
    d9_symbolize_report_get(&rep);
    if (rep.files_failed) fprintf(stderr, "in-process: %s\n", rep.last_error);
    /* tell the parent which address is which */
    char path[1100];
    snprintf(path, sizeof path, "%s/addresses", dir);
    FILE *out = fopen(path, "w");
    if (!out) return 4;
    const char *what[] = {"leaf", "outer", "qsort", "fopen", "padding"};
    for (int i = 0; i < 5; i++) fprintf(out, "%s %" PRIx64 "\n", what[i], frames[i]);
    fclose(out);
    if (sc.with_stacks == 0) return 6; /* the samples' stacks went unnoticed: nothing named */
    return rep.files_failed ? 5 : 0;
}

/* ------------------------------------------------------------------ reading names */

#define MAXA 16
typedef struct names {
    uint64_t addr[MAXA];
    char *name[MAXA][4]; /* per inline depth */
    char *file[MAXA][4];
    uint64_t line[MAXA][4];
    int n;
    int entries;
} names;

static void on_symbol(const d9_event *ev, void *p) {
    names *nm = p;
    if (!d9t_is(ev, "SymbolTableEntry")) return;
    nm->entries++;
    uint64_t a = d9t_field_u(ev, "addr"), depth = d9t_field_u(ev, "inline_depth");
    int i = 0;
    while (i < nm->n && nm->addr[i] != a) i++;
    if (i == nm->n) {
        if (nm->n == MAXA) return;
        nm->addr[nm->n++] = a;
    }
    if (depth >= 4) return;
    d9_dec_str s;
    if (d9_value_str(d9_event_field(ev, "symbol_name"), &s)) {
        free(nm->name[i][depth]);
        nm->name[i][depth] = strndup(s.ptr, s.len);
    }
    if (d9_value_str(d9_event_field(ev, "source_file"), &s)) {
        free(nm->file[i][depth]);
        nm->file[i][depth] = strndup(s.ptr, s.len);
    }
    nm->line[i][depth] = d9t_field_u(ev, "source_line");
}

static void read_names(const char *dir, names *nm) {
    memset(nm, 0, sizeof *nm);
    char **files;
    int n = d9t_list_segments(dir, &files);
    for (int i = 0; i < n; i++) CHECK(d9t_decode_file(files[i], on_symbol, nm) == D9_DEC_END);
    d9t_free_list(files, n);
}

static void free_names(names *nm) {
    for (int i = 0; i < nm->n; i++)
        for (int d = 0; d < 4; d++) {
            free(nm->name[i][d]);
            free(nm->file[i][d]);
        }
}

static const char *name_at(const names *nm, uint64_t a, int depth) {
    for (int i = 0; i < nm->n; i++)
        if (nm->addr[i] == a) return nm->name[i][depth];
    return NULL;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Depth-0 names of `got` equal `want`'s for every address in `which`. */
static void same_names(const names *got, const names *want, const uint64_t *which, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        const char *g = name_at(got, which[i], 0), *w = name_at(want, which[i], 0);
        bool ok = g && w && !strcmp(g, w);
        if (!ok) fprintf(stderr, "%s: %#" PRIx64 ": %s vs in-process %s\n", what, which[i], g ? g : "(none)", w ? w : "(none)");
        CHECK(ok);
    }
}

static char *hash_dir(const char *dir) {
    char cmd[2048], buf[256];
    snprintf(cmd, sizeof cmd, "cd '%s' && cat $(ls | sort) | md5sum", dir);
    FILE *p = popen(cmd, "r");
    buf[0] = 0;
    if (p && !fgets(buf, sizeof buf, p)) buf[0] = 0;
    if (p) pclose(p);
    return strdup(buf);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--record")) return record(argv[2]);

    const char *build = getenv("D9_BUILD_DIR");
    char dial9[1024];
    snprintf(dial9, sizeof dial9, "%s/dial9", build && *build ? build : ".");
    if (access(dial9, X_OK) != 0) {
        fprintf(stderr, "%s not built\n", dial9);
        return 1;
    }
    unsetenv("DEBUGINFOD_URLS"); /* no network in tests */
    char *t = d9t_mkdtemp("symoff");
    CHECK(sh("mkdir -p %s/bin %s/rec %s/debug && cp /proc/%d/exe %s/bin/d9rec", t, t, t, (int)getpid(), t) == 0);
    CHECK(sh("%s/bin/d9rec --record %s/rec", t, t) == 0);

    /* the child's addresses */
    uint64_t a[5] = {0};
    char path[1100], label[32];
    snprintf(path, sizeof path, "%s/rec/addresses", t);
    FILE *f = fopen(path, "r");
    for (int i = 0; f && i < 5; i++) CHECK(fscanf(f, "%31s %" SCNx64, label, &a[i]) == 2);
    if (f) fclose(f);
    enum { LEAF, OUTER, QSORT, FOPEN, PADDING };

    char rec[1100], raw[1100], other[1100], out[1100];
    snprintf(rec, sizeof rec, "%s/rec/run1", t);
    snprintf(raw, sizeof raw, "%s/rec/raw", t);
    snprintf(other, sizeof other, "%s/elsewhere/copy", t);
    names inproc, nm;
    read_names(rec, &inproc);
    CHECK(inproc.n == 5);
    CHECK_STR(name_at(&inproc, a[LEAF], 0), "d9t_offline_leaf");
    CHECK_STR(name_at(&inproc, a[OUTER], 0), "d9t_offline_outer");
    const char *pad = name_at(&inproc, a[PADDING], 0);
    CHECK(pad && !strncmp(pad, "d9rec+0x", 8));
    read_names(raw, &nm);
    CHECK_EQ_U64(nm.entries, 0); /* the raw copies have no symbols yet */
    free_names(&nm);

    /* a copy elsewhere, before anything touches the raw files */
    CHECK(sh("mkdir -p %s && cp %s/trace.*.bin %s/", other, raw, other) == 0);
    char *before = hash_dir(other);

    /* 1. in place, on the trace itself */
    CHECK(sh("%s symbolize -q %s", dial9, raw) == 0);
    read_names(raw, &nm);
    same_names(&nm, &inproc, a, 5, "in place");
#ifdef D9_HAVE_LIBDW
    /* DWARF: the leaf's line in this file; the inlined helper as depth 1 of the outer function */
    for (int i = 0; i < nm.n; i++) {
        if (nm.addr[i] == a[LEAF]) {
            CHECK(nm.file[i][0] && strstr(nm.file[i][0], "test_symbolize_offline.c"));
            CHECK(nm.line[i][0] > 0);
        }
        if (nm.addr[i] == a[OUTER]) {
            CHECK_STR(nm.name[i][1], "d9t_inlined_helper");
            CHECK(nm.line[i][0] > 0 && nm.line[i][1] > 0 && nm.line[i][1] < nm.line[i][0]);
        }
    }
#else
    printf("skip: built without libdw (no file:line check)\n");
#endif
    free_names(&nm);
    /* a second run has nothing to add */
    char *sym_hash = hash_dir(raw);
    CHECK(sh("%s symbolize -q %s", dial9, raw) == 0);
    char *sym_hash2 = hash_dir(raw);
    CHECK_STR(sym_hash2, sym_hash);

    /* 2. -o on the copy in another directory: same names, input unchanged */
    snprintf(out, sizeof out, "%s/out1", t);
    CHECK(sh("%s symbolize -q -o %s %s", dial9, out, other) == 0);
    read_names(out, &nm);
    same_names(&nm, &inproc, a, 5, "copy elsewhere");
    free_names(&nm);
    char *after = hash_dir(other);
    CHECK_STR(after, before);

    /* 3. the binary is gone: its addresses get module+offset names, libc's keep theirs */
    CHECK(sh("mv %s/bin/d9rec %s/debug/d9rec", t, t) == 0);
    snprintf(out, sizeof out, "%s/out2", t);
    CHECK(sh("%s symbolize -q -o %s %s 2>%s/notes", dial9, out, other, t) == 0);
    read_names(out, &nm);
    same_names(&nm, &inproc, a + QSORT, 2, "binary gone");
    const char *leaf = name_at(&nm, a[LEAF], 0);
    CHECK(leaf && !strncmp(leaf, "d9rec+0x", 8));
    CHECK_STR(name_at(&nm, a[PADDING], 0), pad);
    free_names(&nm);
    CHECK(sh("grep -q 'no ELF file found for .*d9rec' %s/notes", t) == 0);

    /* 4. --debug-dir holding the binary (same build id) names them again */
    snprintf(out, sizeof out, "%s/out3", t);
    CHECK(sh("%s symbolize -q --debug-dir %s/debug -o %s %s", dial9, t, out, other) == 0);
    read_names(out, &nm);
    same_names(&nm, &inproc, a, 5, "debug dir");
    free_names(&nm);

    free(before);
    free(after);
    free(sym_hash);
    free(sym_hash2);
    free_names(&inproc);
    d9t_rm_rf(t);
    free(t);
    return d9t_summary("test_symbolize_offline");
}
