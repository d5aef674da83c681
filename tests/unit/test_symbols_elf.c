/* The ELF reader and the symbolizer on real binaries: functions of this test program and of
 * libc (addresses from &function and dladdr) resolve to their names, return addresses to the
 * calling function, gaps to "module+0x..." names; build ids agree with `readelf -n`; a
 * stripped library is named from its separate debug file, also when only the debug file is
 * found; kernel addresses from /proc/kallsyms; corrupt ELF files fail cleanly. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "check.h"
#include "symbols/elf_image.h"
#include "symbols/elf_symtab.h"
#include "symbols/kallsyms.h"
#include "symbols/module.h"
#include "symbols/sym_input.h"
#include "symbols/symbolizer.h"
#include "symbols/vdso.h"

int main(void);

__attribute__((noinline)) static int d9t_static_leaf(int x) {
    __asm__ volatile("" ::: "memory");
    return x * 3 + 1;
}

__attribute__((noinline)) int d9t_global_caller(int x);
__attribute__((noinline)) int d9t_global_caller(int x) {
    __asm__ volatile("" ::: "memory");
    return d9t_static_leaf(x) + 2;
}

/* The maps of this process, as the memory-map source records them. */
static void own_maps(d9_sym_input *in) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long start, end, off, inode;
        char perms[8];
        unsigned maj, min;
        int at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &inode, &at) < 7)
            continue;
        if (perms[2] != 'x' || at <= 0) continue;
        char *path = line + at;
        path[strcspn(path, "\n")] = 0;
        if (!*path) continue;
        char bid[D9_BUILD_ID_HEX_MAX] = "";
        if (path[0] == '/') d9_elf_file_build_id(path, bid, sizeof bid);
        else if (!strcmp(path, "[vdso]")) {
            const void *b;
            size_t n;
            d9_own_vdso(&b, &n, bid, sizeof bid);
        }
        d9_sym_input_add_map(in, start, end, off, path, strlen(path), bid, strlen(bid));
    }
    if (f) fclose(f);
}

static const char *resolve(d9_symbolizer *s, const void *addr, uint64_t flags, d9_sym_result *r) {
    d9_symbolizer_resolve(s, (uint64_t)(uintptr_t)addr, flags, r);
    return r->frames[0].name;
}

/* libc's own functions (under ASan, &write would be the sanitizer's interceptor). */
static void *libc_handle(void) {
    static void *h;
    if (!h) h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    return h;
}
static void *libc_fn(const char *name) { return dlsym(libc_handle(), name); }

/* `name` names the same address as `expected` (libc exports aliases: write/__write). */
static bool same_function(const char *name, const void *addr) {
    void *p = dlsym(libc_handle(), name);
    if (!p) p = dlsym(RTLD_DEFAULT, name);
    if (p == addr) return true;
    Dl_info a, b;
    return p && dladdr(p, &a) && dladdr(addr, &b) && a.dli_saddr == b.dli_saddr;
}

static void readelf_build_id(const char *path, char *out, size_t len) {
    out[0] = 0;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
        char *b = strstr(line, "Build ID: ");
        if (b) {
            snprintf(out, len, "%s", b + 10);
            out[strcspn(out, "\n ")] = 0;
        }
    }
    if (p) pclose(p);
}

static void test_build_ids(void) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(n > 0);
    exe[n > 0 ? n : 0] = 0;
    Dl_info libc;
    CHECK(dladdr(libc_fn("write"), &libc) && libc.dli_fname);
    const char *paths[] = {exe, libc.dli_fname};
    for (int i = 0; i < 2; i++) {
        char want[D9_BUILD_ID_HEX_MAX], got[D9_BUILD_ID_HEX_MAX];
        readelf_build_id(paths[i], want, sizeof want);
        if (!want[0]) {
            printf("skip: readelf shows no build id for %s\n", paths[i]);
            continue;
        }
        CHECK(d9_elf_file_build_id(paths[i], got, sizeof got));
        CHECK_STR(got, want);
        d9_elf_image img;
        CHECK(d9_elf_open_path(&img, paths[i], NULL, 0) == 0);
        CHECK_STR(img.build_id, want);
        d9_elf_close(&img);
    }
    char bid[D9_BUILD_ID_HEX_MAX];
    CHECK(!d9_elf_file_build_id("/proc/self/status", bid, sizeof bid));
    CHECK(!d9_elf_file_build_id("/nonexistent/file", bid, sizeof bid));
}

static void test_own_functions(d9_symbolizer *s) {
    d9_sym_result r;
    CHECK_STR(resolve(s, (void *)&d9t_static_leaf, D9_ADDR_EXACT, &r), "d9t_static_leaf");
    CHECK(r.named);
    CHECK_STR(resolve(s, (const char *)&d9t_static_leaf + 2, D9_ADDR_EXACT, &r), "d9t_static_leaf");
    CHECK_STR(resolve(s, (void *)&d9t_global_caller, D9_ADDR_EXACT, &r), "d9t_global_caller");
    CHECK_STR(resolve(s, (void *)&main, D9_ADDR_EXACT, &r), "main");
    /* A return address just past the first instruction belongs to the function; as an exact
     * address the function's first byte after a call would still be inside it. */
    CHECK_STR(resolve(s, (const char *)&d9t_global_caller + 1, D9_ADDR_RETURN, &r), "d9t_global_caller");

    /* The function's end: as a return address (a call was its last instruction) it is still
     * this function; as an exact address it is not. */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    d9_elf_image img;
    CHECK(d9_elf_open_path(&img, exe, NULL, 0) == 0);
    d9_elf_symtab t = {0};
    CHECK(d9_elf_symtab_add(&t, &img, ".symtab") > 0);
    d9_elf_symtab_finish(&t);
    uint64_t link_addr = 0, size = 0;
    for (size_t i = 0; i < t.count; i++)
        if (!strcmp(t.syms[i].name, "d9t_global_caller")) {
            link_addr = t.syms[i].addr;
            size = t.syms[i].size;
        }
    CHECK(size > 0);
    const char *end = (const char *)&d9t_global_caller + size;
    CHECK_STR(resolve(s, end, D9_ADDR_RETURN, &r), "d9t_global_caller");
    resolve(s, end, D9_ADDR_EXACT, &r);
    CHECK(strcmp(r.frames[0].name, "d9t_global_caller") != 0);
    /* The symbol table's address plus the load bias is the function's address. */
    Dl_info di;
    CHECK(dladdr((void *)&d9t_global_caller, &di));
    CHECK_EQ_U64((uint64_t)(uintptr_t)di.dli_fbase + link_addr, (uint64_t)(uintptr_t)&d9t_global_caller);
    d9_elf_symtab_free(&t);
    d9_elf_close(&img);
}

static void test_libc(d9_symbolizer *s) {
    void *fns[] = {libc_fn("write"), libc_fn("malloc"), libc_fn("qsort"), libc_fn("fopen"), libc_fn("strtoull")};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        Dl_info di;
        CHECK(dladdr(fns[i], &di) && di.dli_sname);
        d9_sym_result r;
        const char *name = resolve(s, fns[i], D9_ADDR_EXACT, &r);
        CHECK(r.named);
        if (!same_function(name, fns[i]))
            fprintf(stderr, "libc %p: got %s, dladdr says %s\n", fns[i], name, di.dli_sname);
        CHECK(same_function(name, fns[i]));
        /* a return address into the middle of the function */
        name = resolve(s, (const char *)fns[i] + 5, D9_ADDR_RETURN, &r);
        CHECK(same_function(name, fns[i]));
    }
}

/* libc is stripped (.dynsym only): with its debug file (libc6-dbg), internal functions get
 * names too, and a module found only as a debug file still maps addresses right. */
static void test_debug_file(d9_symbolizer *s) {
    Dl_info di;
    void *wr = libc_fn("write");
    CHECK(dladdr(wr, &di));
    char bid[D9_BUILD_ID_HEX_MAX], dbg[512];
    if (!d9_elf_file_build_id(di.dli_fname, bid, sizeof bid)) {
        printf("skip: libc has no build id\n");
        return;
    }
    snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
    if (access(dbg, R_OK) != 0) {
        printf("skip: no debug file for libc (%s): install libc6-dbg\n", dbg);
        return;
    }
    /* A local function of the debug file's .symtab, absent from .dynsym. */
    d9_elf_image img;
    CHECK(d9_elf_open_path(&img, dbg, NULL, 0) == 0);
    CHECK_STR(img.build_id, bid);
    d9_elf_symtab t = {0};
    CHECK(d9_elf_symtab_add(&t, &img, ".symtab") > 100);
    d9_elf_symtab_finish(&t);
    const d9_elf_sym *local = NULL;
    for (size_t i = 0; i < t.count && !local; i++) {
        const d9_elf_sym *c = &t.syms[i];
        if (c->size >= 64 && c->name[0] != '_' && !dlsym(RTLD_DEFAULT, c->name) &&
            d9_elf_symtab_lookup(&t, c->addr + 8) == c)
            local = c;
    }
    CHECK(local != NULL);
    if (local) {
        d9_sym_result r;
        const char *addr = (const char *)di.dli_fbase + local->addr + 8;
        CHECK_STR(resolve(s, addr, D9_ADDR_EXACT, &r), local->name);
    }

    /* Only the debug file: the recorded path is gone, the build id finds the .debug file. */
    d9_module_search search = {.system_debug_dir = true};
    d9_module *m = d9_module_load("/gone/libc.so.6", bid, &search);
    CHECK(m && m->found && !m->have_binary && m->have_debug);
    /* the executable mapping of libc in this process */
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    unsigned long long start = 0, off = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long a, b, o;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s %llx", &a, &b, perms, &o) == 4 && perms[2] == 'x' &&
            strstr(line, di.dli_fname) && (uintptr_t)wr >= a && (uintptr_t)wr < b) {
            start = a;
            off = o;
        }
    }
    if (f) fclose(f);
    CHECK(start != 0);
    uint64_t vaddr = 0;
    CHECK(m && d9_module_vaddr(m, start, off, (uint64_t)(uintptr_t)wr, &vaddr));
    CHECK_EQ_U64(vaddr, (uint64_t)(uintptr_t)wr - (uint64_t)(uintptr_t)di.dli_fbase);
    const d9_elf_sym *w = m ? d9_elf_symtab_lookup(&m->syms, vaddr) : NULL;
    CHECK(w && same_function(w->name, wr));
    d9_module_free(m);
    d9_elf_symtab_free(&t);
    d9_elf_close(&img);
}

static void test_fallbacks(d9_symbolizer *s, const d9_sym_input *in) {
    d9_sym_result r;
    /* The last byte of this program's executable mapping: page padding after the code. */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *base = strrchr(exe, '/') + 1;
    const d9_sym_map *text = NULL;
    for (size_t i = 0; i < in->map_count; i++)
        if (!strcmp(in->maps[i].path, exe)) text = &in->maps[i];
    CHECK(text != NULL);
    if (text) {
        uint64_t a = text->end - 1;
        d9_symbolizer_resolve(s, a, D9_ADDR_EXACT, &r);
        char want[512];
        snprintf(want, sizeof want, "%s+0x%" PRIx64, base, a - text->start + text->file_offset);
        CHECK(!r.named);
        CHECK_STR(r.frames[0].name, want);
        CHECK(d9_sym_is_fallback_name(r.frames[0].name, strlen(r.frames[0].name)));
    }
    d9_symbolizer_resolve(s, 0x10, D9_ADDR_RETURN, &r);
    CHECK_STR(r.frames[0].name, "[unknown]+0x10");
    CHECK(!r.named);
    d9_symbolizer_resolve(s, (uint64_t)-128, D9_ADDR_RETURN, &r);
    CHECK_STR(r.frames[0].name, "[perf_context_kernel]");
    CHECK(!d9_sym_is_fallback_name("write", 5));
    CHECK(!d9_sym_is_fallback_name("operator+", 9));
    CHECK(!d9_sym_is_fallback_name("x+0x", 4));
    CHECK(d9_sym_is_fallback_name("libc.so.6+0x1f", 14));
}

static void test_vdso(d9_symbolizer *s) {
    const void *base;
    size_t size;
    char bid[D9_BUILD_ID_HEX_MAX];
    if (!d9_own_vdso(&base, &size, bid, sizeof bid)) {
        printf("skip: no vDSO\n");
        return;
    }
    d9_elf_image img;
    CHECK(d9_elf_open_mem(&img, base, size, NULL, 0) == 0);
    d9_elf_symtab t = {0};
    CHECK(d9_elf_symtab_add(&t, &img, ".dynsym") > 0);
    d9_elf_symtab_finish(&t);
    const d9_elf_sym *gettime = NULL;
    for (size_t i = 0; i < t.count; i++)
        if (!strcmp(t.syms[i].name, "__vdso_clock_gettime")) gettime = &t.syms[i];
    CHECK(gettime != NULL);
    if (gettime) {
        /* the vDSO is ET_DYN linked at 0 and mapped whole from its start */
        d9_sym_result r;
        const char *name = resolve(s, (const char *)base + gettime->addr + 3, D9_ADDR_EXACT, &r);
        CHECK(!strcmp(name, "__vdso_clock_gettime") || !strcmp(name, "clock_gettime"));
    }
    d9_elf_symtab_free(&t);
    d9_elf_close(&img);
}

static void test_kallsyms(void) {
    char err[256];
    d9_kallsyms *k = d9_kallsyms_load("/proc/kallsyms", err, sizeof err);
    if (!k) {
        printf("skip: kallsyms: %s\n", err);
        return;
    }
    /* the address of "schedule" as the file lists it */
    FILE *f = fopen("/proc/kallsyms", "r");
    char line[512];
    unsigned long long addr = 0;
    while (f && fgets(line, sizeof line, f)) {
        char name[256], type;
        unsigned long long a;
        if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && !strcmp(name, "schedule") &&
            (type == 'T' || type == 't'))
            addr = a;
    }
    if (f) fclose(f);
    CHECK(addr != 0);
    const char *name = d9_kallsyms_lookup(k, addr + 4);
    CHECK(name && !strcmp(name, "schedule"));
    CHECK(d9_kallsyms_lookup(k, 0x1000) == NULL);
    CHECK(d9_kallsyms_count(k) > 1000);
    d9_kallsyms_free(k);

    /* A kallsyms that hides its addresses (kptr_restrict) is refused. */
    char path[] = "/tmp/d9test-kallsyms-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *hidden = "0000000000000000 T _text\n0000000000000000 T schedule\n";
    CHECK(write(fd, hidden, strlen(hidden)) == (ssize_t)strlen(hidden));
    close(fd);
    CHECK(d9_kallsyms_load(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "kptr_restrict") != NULL);
    unlink(path);
}

/* Corrupt ELF files: every prefix and random byte flips of a real header region must fail
 * cleanly or parse, never read out of bounds (ASan watches). */
static void test_corrupt(void) {
    Dl_info di;
    CHECK(dladdr(libc_fn("write"), &di));
    d9_elf_image real;
    CHECK(d9_elf_open_path(&real, di.dli_fname, NULL, 0) == 0);
    size_t n = real.size < 65536 ? real.size : 65536;
    uint8_t *copy = malloc(n);
    memcpy(copy, real.data, n);
    d9_elf_close(&real);
    unsigned seed = 12345;
    for (int round = 0; round < 3000; round++) {
        size_t len = round < 200 ? (size_t)round * 7 % n : n;
        uint8_t *buf = malloc(len ? len : 1);
        memcpy(buf, copy, len);
        for (int k = 0; round >= 200 && k < 8; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % (len < 4096 ? len : 4096);
            buf[at] ^= (uint8_t)(seed >> 3);
        }
        d9_elf_image img;
        if (d9_elf_open_mem(&img, buf, len, NULL, 0) == 0) {
            d9_elf_symtab t = {0};
            d9_elf_symtab_add(&t, &img, ".symtab");
            d9_elf_symtab_add(&t, &img, ".dynsym");
            d9_elf_symtab_finish(&t);
            d9_elf_symtab_lookup(&t, 0x1234);
            d9_elf_section sec;
            d9_elf_find_section(&img, ".text", &sec);
            d9_elf_symtab_free(&t);
            d9_elf_close(&img);
        }
        free(buf);
    }
    free(copy);
    char err[128];
    d9_elf_image img;
    CHECK(d9_elf_open_mem(&img, "\x7f" "ELF", 4, err, sizeof err) != 0);
    CHECK(d9_elf_open_path(&img, "/proc/self/status", err, sizeof err) != 0);
    CHECK(d9_elf_open_path(&img, "/nonexistent", err, sizeof err) != 0);
    CHECK(strstr(err, "/nonexistent") != NULL);
    /* notes that lie about their sizes */
    uint8_t notes[32] = {4, 0, 0, 0, 0xff, 0xff, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0};
    char hex[D9_BUILD_ID_HEX_MAX];
    CHECK(!d9_elf_notes_build_id(notes, sizeof notes, hex, sizeof hex));
}

int main(void) {
    /* keep the callers alive so the compiler emits them */
    volatile int x = d9t_global_caller(1);
    (void)x;
    test_build_ids();

    d9_sym_input in;
    d9_sym_input_init(&in);
    own_maps(&in);
    CHECK(in.map_count >= 3);
    d9_sym_options opt = {.system_debug_dir = true};
    d9_symbolizer *s = d9_symbolizer_new(&opt);
    CHECK(s && d9_symbolizer_set_maps(s, in.maps, in.map_count));
    test_own_functions(s);
    test_libc(s);
    test_debug_file(s);
    test_fallbacks(s, &in);
    test_vdso(s);
    d9_symbolizer_free(s);
    d9_sym_input_free(&in);

    test_kallsyms();
    test_corrupt();
    return d9t_summary("test_symbols_elf");
}
