/* Stripped libraries take their names, file:line and unwind tables from their separate debug
 * file, as Debian ships them (-dbgsym packages under /usr/lib/debug). libd9dbglink.so is built
 * with -g; the test splits it as dh_strip does (objcopy --only-keep-debug, strip
 * --strip-unneeded, objcopy --add-gnu-debuglink) and lays the debug file out in temporary
 * debug roots, then:
 *  1. the symbolizer names the library's static function dl_hidden (absent from .dynsym) with
 *     its file:line only when the debug file is found: by build id (ROOT/.build-id/xx/rest.debug)
 *     or by .gnu_debuglink (ROOT/<library's directory>/name); a debug file of another build is
 *     not used, and the module's note says so: another build id, or, for a library without
 *     one (its note removed), another CRC than its .gnu_debuglink records;
 *  2. the unwinder reads .debug_frame from the debug file (DIAL9_DEBUG_FILE_DIRS): a stack
 *     captured inside the stripped library's df_middle <- df_outer (frameless, described only
 *     by .debug_frame) names df_outer only once the debug file is there.
 * Deterministic: no perf, no timing. Needs objcopy and strip (binutils). */
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sources/unwind_tables.h"
#include "symbols/debug_file.h"
#include "symbols/elf_image.h"
#include "symbols/symbolizer.h"
#include "test_stack_capture.h"
#if defined(D9_HAVE_LIBDW)
#include "symbols/dwarf/dwarf_backend.h"
#endif

static char T[256];
static char LIB[512];   /* the stripped library */
static char DEBUG[512]; /* its debug file, outside every search path */
static char BID[D9_BUILD_ID_HEX_MAX];
static char LIBNB[512]; /* the same without a build id, stripped, and its debug file */
static char DEBUGNB[512];

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

/* The executable mapping of `path` in this process. */
static bool lib_map(const char *path, char *build_id, d9_sym_map *m) {
    FILE *f = fopen("/proc/self/maps", "re");
    char line[1024];
    bool ok = false;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        char perms[8];
        int at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &at) != 4 || !at) continue;
        line[strcspn(line, "\n")] = 0;
        if (perms[2] != 'x' || strcmp(line + at, path) != 0) continue;
        *m = (d9_sym_map){.start = lo, .end = hi, .file_offset = off, .path = (char *)path, .build_id = build_id};
        ok = true;
        break;
    }
    if (f) fclose(f);
    return ok;
}

typedef struct named {
    bool named;
    char name[128], file[512];
    uint32_t line;
    char note[1024];
} named;

static void keep_note(const char *path, const char *note, void *ctx) {
    (void)path;
    snprintf(((named *)ctx)->note, sizeof ((named *)ctx)->note, "%s", note);
}

/* dl_hidden resolved by a fresh symbolizer searching `root` (and not the system's roots). */
static named resolve_hidden(const char *root, uint64_t addr, const d9_sym_map *map) {
    named r;
    memset(&r, 0, sizeof r);
    const char *dirs[1] = {root};
    d9_sym_options opt = {.debug_dirs = dirs, .debug_dir_count = 1, .system_debug_dir = false};
#if defined(D9_HAVE_LIBDW)
    const char *why = "";
    opt.backend = d9_dwarf_backend_new(dirs, 1, &why);
#endif
    d9_symbolizer *s = d9_symbolizer_new(&opt);
    static d9_sym_result res;
    if (s && d9_symbolizer_set_maps(s, map, 1)) {
        d9_symbolizer_resolve(s, addr, D9_ADDR_EXACT, &res);
        r.named = res.named;
        snprintf(r.name, sizeof r.name, "%s", res.frames[0].name);
        const d9_sym_frame *in = &res.frames[res.count - 1];
        snprintf(r.file, sizeof r.file, "%s", in->file);
        r.line = in->line;
        d9_symbolizer_module_notes(s, keep_note, &r);
    }
    d9_symbolizer_free(s);
    if (opt.backend) opt.backend->close(opt.backend->ctx);
    printf("  root %s: %s%s %s:%u%s%s\n", root + strlen(T), r.name, r.named ? "" : " (fallback)", r.file, r.line,
           r.note[0] ? "; note: " : "", r.note);
    return r;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* dl_hidden of the library at `lib` (loaded, then unloaded); its map and where it starts */
static void *load_hidden(const char *lib, char *build_id, d9_sym_map *map, uint64_t *addr, int *line) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (!h) return NULL;
    void *(*hidden_address)(void) = (void *(*)(void))dlsym(h, "dl_hidden_address");
    int (*hidden_line)(void) = (int (*)(void))dlsym(h, "dl_hidden_line");
    CHECK(hidden_address && hidden_line);
    bool mapped = lib_map(lib, build_id, map);
    CHECK(mapped);
    if (!hidden_address || !hidden_line || !mapped) {
        dlclose(h);
        return NULL;
    }
    *addr = (uint64_t)(uintptr_t)hidden_address();
    *line = hidden_line();
    return h;
}

static void symbolizer_checks(void) {
    d9_sym_map map;
    uint64_t addr;
    int line;
    void *h = load_hidden(LIB, BID, &map, &addr, &line);
    if (!h) return;
    char root[600];

    CHECK(h != NULL);
    if (!h) return;
    /* no debug file anywhere: a fallback name */
    snprintf(root, sizeof root, "%s/none", T);
    named r = resolve_hidden(root, addr, &map);
    CHECK(!r.named);
    CHECK(strstr(r.name, "libd9dbglink.so+0x") == r.name);
    CHECK(r.note[0] == 0);

    /* by build id */
    snprintf(root, sizeof root, "%s/by-build-id", T);
    r = resolve_hidden(root, addr, &map);
    CHECK(r.named);
    CHECK_STR(r.name, "dl_hidden");
#if defined(D9_HAVE_LIBDW)
    CHECK(ends_with(r.file, "debuglink_lib.c"));
    CHECK(r.line >= (uint32_t)line && r.line <= (uint32_t)line + 3); /* the function, or its first line of code */
#endif

    /* by .gnu_debuglink under the root, at the library's directory */
    snprintf(root, sizeof root, "%s/by-link", T);
    r = resolve_hidden(root, addr, &map);
    CHECK(r.named);
    CHECK_STR(r.name, "dl_hidden");
#if defined(D9_HAVE_LIBDW)
    CHECK(ends_with(r.file, "debuglink_lib.c"));
    CHECK(r.line >= (uint32_t)line && r.line <= (uint32_t)line + 3); /* the function, or its first line of code */
#endif

    /* the build-id path holding another build's debug file: passed over, with a note */
    snprintf(root, sizeof root, "%s/other-build", T);
    r = resolve_hidden(root, addr, &map);
    CHECK(!r.named);
    CHECK(strstr(r.note, "build id") != NULL && strstr(r.note, BID) != NULL);
    CHECK(!r.file[0]);
    dlclose(h);

    /* no build id: found by .gnu_debuglink when the CRC is right, passed over with a note when not */
    char none[1] = "";
    if (!(h = load_hidden(LIBNB, none, &map, &addr, &line))) return;
    snprintf(root, sizeof root, "%s/nb-link", T);
    r = resolve_hidden(root, addr, &map);
    CHECK(r.named);
    CHECK_STR(r.name, "dl_hidden");
#if defined(D9_HAVE_LIBDW)
    CHECK(ends_with(r.file, "debuglink_lib.c"));
    CHECK(r.line >= (uint32_t)line && r.line <= (uint32_t)line + 3); /* the function, or its first line of code */
#endif
    snprintf(root, sizeof root, "%s/nb-bad-crc", T);
    r = resolve_hidden(root, addr, &map);
    CHECK(!r.named);
    CHECK(!r.file[0]);
    CHECK(strstr(r.note, "CRC") != NULL && strstr(r.note, "another build") != NULL);
    dlclose(h);
}

/* ---------------------------------------------------------------- unwinding */

typedef int (*df_fn)(void (*)(void), int);

static tt_range lib_function(void *h, const char *name) {
    tt_range r = {0, 0};
    void *a = dlsym(h, name);
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    if (a && dladdr1(a, &di, (void **)&sym, RTLD_DL_SYMENT) && sym)
        r = (tt_range){(uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)a + sym->st_size};
    return r;
}

static int at(const uint64_t *out, uint32_t n, tt_range r) {
    for (uint32_t i = 0; i < n; i++)
        if (tt_in(r, out[i])) return (int)i;
    return -1;
}

/* Load the stripped library, capture a stack inside it, unwind; where df_outer is (-1: lost)
 * and the library's .debug_frame FDE count in the tables. */
static int unwind_through_lib(uint32_t *dbg_count) {
    void *h = dlopen(LIB, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (!h) return -2;
    df_fn outer = (df_fn)dlsym(h, "df_outer");
    tt_range middle = lib_function(h, "df_middle"), outer_r = lib_function(h, "df_outer");
    CHECK(outer && middle.hi > middle.lo && outer_r.hi > outer_r.lo);
    int where = -2;
    g_captured = 0;
    if (outer) outer(capture_caller, 3);
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    CHECK(t != NULL && g_captured == 1);
    if (t && g_captured == 1) {
        const d9_unwind_object *o = d9_unwind_tables_find(t, middle.lo);
        *dbg_count = o ? o->dbg_count : 0;
        static uint64_t out[128];
        d9_stack_method m;
        d9_unwind_input in = {.ip = g_cap.ip, .sp = g_cap.sp, .bp = g_cap.bp, .ip_is_return = true,
                              .stack = g_cap.stack, .stack_len = g_cap.len, .chain = g_cap.chain,
                              .nchain = g_cap.nchain};
        uint32_t n = d9_unwind_user_stack(t, &in, out, 128, &m);
        CHECK(at(out, n, middle) == 0);
        where = at(out, n, outer_r);
    }
    if (t) d9_unwind_tables_release();
    dlclose(h);
    return where;
}

static void unwinder_checks(void) {
    uint32_t fdes = 0;
    int without = unwind_through_lib(&fdes);
    printf("  unwinding without the debug file: df_outer at %d, %u .debug_frame FDEs\n", without, fdes);
    CHECK(without == -1);
    CHECK_EQ_U64(fdes, 0);
    /* the debug file appears in the root DIAL9_DEBUG_FILE_DIRS names; the next load reads it */
    CHECK(sh("mkdir -p %s/unwind-root/.build-id/%.2s && cp %s %s/unwind-root/.build-id/%.2s/%s.debug", T, BID, DEBUG,
             T, BID, BID + 2) == 0);
    int with = unwind_through_lib(&fdes);
    printf("  unwinding with the debug file: df_outer at %d, %u .debug_frame FDEs\n", with, fdes);
    CHECK(with == 1);
    CHECK(fdes > 0);
}

int main(void) {
    snprintf(T, sizeof T, "%s/d9-debug-file-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(T)) {
        perror("mkdtemp");
        return 1;
    }
    /* before anything reads the roots (once per process) */
    char roots[400];
    snprintf(roots, sizeof roots, "%s/unwind-root", T);
    setenv("DIAL9_DEBUG_FILE_DIRS", roots, 1);
    size_t nroots;
    const char *const *r = d9_debug_roots(&nroots);
    CHECK(nroots == 1 && strcmp(r[0], roots) == 0);

    snprintf(LIB, sizeof LIB, "%s/lib/libd9dbglink.so", T);
    snprintf(DEBUG, sizeof DEBUG, "%s/work/libd9dbglink.so.debug", T);
    /* dh_strip's steps */
    int rc = sh("mkdir -p %s/lib %s/work && cp %s %s && objcopy --only-keep-debug %s %s && "
                "strip --remove-section=.comment --strip-unneeded %s && objcopy --add-gnu-debuglink=%s %s",
                T, T, D9_DEBUGLINK_LIB, LIB, LIB, DEBUG, LIB, DEBUG, LIB);
    CHECK(rc == 0);
    d9_elf_image img;
    d9_elf_section sec;
    CHECK(d9_elf_open_path(&img, LIB, NULL, 0) == 0);
    CHECK(!d9_elf_find_section(&img, ".symtab", &sec) && !d9_elf_find_section(&img, ".debug_info", &sec) &&
          !d9_elf_find_section(&img, ".debug_frame", &sec));
    CHECK(d9_elf_find_section(&img, ".gnu_debuglink", &sec));
    snprintf(BID, sizeof BID, "%s", img.build_id);
    d9_elf_close(&img);
    CHECK(strlen(BID) >= 4);
    if (rc != 0 || strlen(BID) < 4) return d9t_summary("symbols_debug_file");
    printf("stripped %s (build id %s), debug file %s\n", LIB, BID, DEBUG);

    /* the roots: by build id; by debuglink at ROOT/<dir of the library>/name; the same name
     * holding the debug file with a byte appended (same build id, other CRC); the build-id
     * path holding another build's debug file (this test program's) */
    CHECK(sh("mkdir -p %s/none %s/by-build-id/.build-id/%.2s && cp %s %s/by-build-id/.build-id/%.2s/%s.debug", T, T,
             BID, DEBUG, T, BID, BID + 2) == 0);
    CHECK(sh("mkdir -p %s/by-link%s/lib && cp %s %s/by-link%s/lib/", T, T, DEBUG, T, T) == 0);
    CHECK(sh("mkdir -p %s/other-build/.build-id/%.2s && objcopy --only-keep-debug /proc/%d/exe "
             "%s/other-build/.build-id/%.2s/%s.debug",
             T, BID, (int)getpid(), T, BID, BID + 2) == 0);

    /* without a build id: the library and its debug file lose the note before the split */
    snprintf(LIBNB, sizeof LIBNB, "%s/libnb/libd9dbglink.so", T);
    snprintf(DEBUGNB, sizeof DEBUGNB, "%s/worknb/libd9dbglink.so.debug", T);
    CHECK(sh("mkdir -p %s/libnb %s/worknb && objcopy --remove-section=.note.gnu.build-id %s %s && "
             "objcopy --only-keep-debug %s %s && strip --remove-section=.comment --strip-unneeded %s && "
             "objcopy --add-gnu-debuglink=%s %s",
             T, T, D9_DEBUGLINK_LIB, LIBNB, LIBNB, DEBUGNB, LIBNB, DEBUGNB, LIBNB) == 0);
    char nb[D9_BUILD_ID_HEX_MAX];
    CHECK(!d9_elf_file_build_id(LIBNB, nb, sizeof nb));
    CHECK(sh("mkdir -p %s/nb-link%s/libnb && cp %s %s/nb-link%s/libnb/", T, T, DEBUGNB, T, T) == 0);
    CHECK(sh("mkdir -p %s/nb-bad-crc%s/libnb && cp %s %s/nb-bad-crc%s/libnb/ && "
             "printf x >> %s/nb-bad-crc%s/libnb/libd9dbglink.so.debug",
             T, T, DEBUGNB, T, T, T, T) == 0);

    printf("1. symbolizer\n");
    symbolizer_checks();
    printf("2. unwinder (.debug_frame)\n");
    unwinder_checks();

    if (d9t_failed == 0) sh("rm -rf %s", T);
    else printf("kept %s\n", T);
    return d9t_summary("symbols_debug_file");
}
