#include "symbols/dwarf/dwarf_backend.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/dwarf/libdw_loader.h"

#define MAX_INLINE_DEPTH 64

/* One Dwfl per ELF file, holding that file alone at its own link-time addresses (base 0,
 * no p_vaddr added), so the symbolizer's file addresses are libdwfl's addresses. */
typedef struct dw_file {
    char *path;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL when the file could not be reported */
} dw_file;

struct debuginfod_client;

typedef struct dwarf_backend {
    d9_sym_backend base;
    const d9_libdw *dw;
    char *debuginfo_path;
    Dwfl_Callbacks callbacks;
    dw_file *files;
    size_t nfiles, cap;
    /* libdebuginfod, loaded on first use and never unloaded: unloading it would unload libcurl
     * and the TLS libraries behind it with their global state still allocated */
    bool dbgi_tried;
    struct debuginfod_client *dbgi_client;
    int (*dbgi_find)(struct debuginfod_client *, const unsigned char *, int, char **);
    void (*dbgi_end)(struct debuginfod_client *);
} dwarf_backend;

static dw_file *file_for(dwarf_backend *b, const char *path) {
    for (size_t i = 0; i < b->nfiles; i++)
        if (strcmp(b->files[i].path, path) == 0) return &b->files[i];
    if (b->nfiles == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        dw_file *f = realloc(b->files, cap * sizeof *f);
        if (!f) return NULL;
        b->files = f;
        b->cap = cap;
    }
    dw_file *f = &b->files[b->nfiles];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (!f->path) return NULL;
    const d9_libdw *dw = b->dw;
    f->dwfl = dw->dwfl_begin(&b->callbacks);
    if (f->dwfl) {
        dw->dwfl_report_begin(f->dwfl);
        f->mod = dw->dwfl_report_elf(f->dwfl, path, path, -1, 0, false);
        dw->dwfl_report_end(f->dwfl, NULL, NULL);
    }
    b->nfiles++;
    return f;
}

static bool is_function_scope(const d9_libdw *dw, Dwarf_Die *die) {
    int tag = dw->dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

/* The name of a (possibly inlined or out-of-line instance of a) function: follow
 * DW_AT_abstract_origin / DW_AT_specification to where the name lives. */
static const char *scope_name(const d9_libdw *dw, Dwarf_Die *die) {
    Dwarf_Attribute attr;
    const char *n = NULL;
    if (dw->dwarf_attr_integrate(die, DW_AT_name, &attr)) n = dw->dwarf_formstring(&attr);
    if (!n && dw->dwarf_attr_integrate(die, DW_AT_linkage_name, &attr)) n = dw->dwarf_formstring(&attr);
    return n;
}

/* The call site of an inlined instance: which file and line of its caller called it. */
static void call_site(const d9_libdw *dw, Dwarf_Die *inlined, Dwarf_Die *cu, const char **file,
                      uint32_t *line) {
    Dwarf_Attribute attr;
    Dwarf_Word v;
    *file = "";
    *line = 0;
    if (dw->dwarf_attr(inlined, DW_AT_call_line, &attr) && dw->dwarf_formudata(&attr, &v) == 0)
        *line = (uint32_t)v;
    Dwarf_Files *files;
    size_t nfiles;
    if (dw->dwarf_attr(inlined, DW_AT_call_file, &attr) && dw->dwarf_formudata(&attr, &v) == 0 &&
        dw->dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && v < nfiles) {
        const char *f = dw->dwarf_filesrc(files, v, NULL, NULL);
        if (f) *file = f;
    }
}

static uint32_t dw_lookup(void *ctx, const char *elf_path, const char *build_id, uint64_t vaddr,
                          d9_sym_frame *frames, uint32_t max) {
    (void)build_id; /* the symbolizer already checked the file's build id */
    dwarf_backend *b = ctx;
    const d9_libdw *dw = b->dw;
    dw_file *f = file_for(b, elf_path);
    if (!f || !f->mod || max == 0) return 0;

    /* The innermost line, and the function as libdwfl names it (when DWARF has no scope). */
    const char *line_file = "";
    int line_no = 0;
    Dwfl_Line *l = dw->dwfl_module_getsrc(f->mod, vaddr);
    if (l) {
        const char *src = dw->dwfl_lineinfo(l, NULL, &line_no, NULL, NULL, NULL);
        if (src) line_file = src;
    }

    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dw->dwfl_module_addrdie(f->mod, vaddr, &bias);
    Dwarf_Die *scopes = NULL;
    int nscopes = cu ? dw->dwarf_getscopes(cu, vaddr - bias, &scopes) : 0;
    /* Function scopes, innermost first, up to the enclosing subprogram. The scopes around an
     * inlined instance are those of its abstract definition, so each step outwards asks for
     * the concrete scopes containing the inlined_subroutine DIE itself. */
    Dwarf_Die fn[MAX_INLINE_DEPTH];
    int nfn = 0;
    Dwarf_Die cur;
    bool have = false;
    for (int i = 0; i < nscopes && !have; i++)
        if (is_function_scope(dw, &scopes[i])) {
            cur = scopes[i];
            have = true;
        }
    while (have && nfn < MAX_INLINE_DEPTH) {
        fn[nfn++] = cur;
        if (dw->dwarf_tag(&cur) != DW_TAG_inlined_subroutine) break;
        Dwarf_Die *outer = NULL;
        int nouter = dw->dwarf_getscopes_die(&cur, &outer);
        have = false;
        for (int j = 1; j < nouter && !have; j++) /* [0] is the inlined_subroutine itself */
            if (is_function_scope(dw, &outer[j])) {
                cur = outer[j];
                have = true;
            }
        free(outer);
    }
    uint32_t n = 0;
    if (nfn == 0) {
        const char *name = dw->dwfl_module_addrname(f->mod, vaddr);
        if (name || line_no > 0) {
            frames[0] = (d9_sym_frame){.name = name ? name : "", .file = line_file,
                                       .line = line_no > 0 ? (uint32_t)line_no : 0};
            n = 1;
        }
        free(scopes);
        return n;
    }
    /* Keep the outermost frames when there are more than fit. */
    int first = nfn > (int)max ? nfn - (int)max : 0;
    for (int i = nfn - 1; i >= first; i--) { /* outermost (the function) first */
        d9_sym_frame *fr = &frames[n++];
        const char *name = scope_name(dw, &fn[i]);
        fr->name = name ? name : "";
        if (i == 0) { /* innermost: the line the address is on */
            fr->file = line_file;
            fr->line = line_no > 0 ? (uint32_t)line_no : 0;
        } else { /* where this function called the next, inlined one */
            call_site(dw, &fn[i - 1], cu, &fr->file, &fr->line);
        }
    }
    free(scopes);
    return n;
}

/* ELF files by build id from debuginfod servers (DEBUGINFOD_URLS), with elfutils' client
 * library loaded on first use: libdwfl downloads separate debug files itself (through
 * dwfl_standard_find_debuginfo), but does not tell where it put an executable it fetched. */
typedef struct debuginfod_client debuginfod_client;
typedef debuginfod_client *(*dbgi_begin_fn)(void);
typedef int (*dbgi_find_fn)(debuginfod_client *, const unsigned char *, int, char **);
typedef void (*dbgi_end_fn)(debuginfod_client *);

static bool load_debuginfod(dwarf_backend *b) {
    if (b->dbgi_tried) return b->dbgi_client != NULL;
    b->dbgi_tried = true;
    void *lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    dbgi_begin_fn begin = (dbgi_begin_fn)dlsym(lib, "debuginfod_begin");
    b->dbgi_find = (dbgi_find_fn)dlsym(lib, "debuginfod_find_executable");
    b->dbgi_end = (dbgi_end_fn)dlsym(lib, "debuginfod_end");
    if (begin && b->dbgi_find && b->dbgi_end) b->dbgi_client = begin();
    return b->dbgi_client != NULL;
}

static char *dw_find_elf(void *ctx, const char *build_id, const char *recorded_path) {
    (void)recorded_path;
    dwarf_backend *b = ctx;
    const char *urls = getenv("DEBUGINFOD_URLS");
    size_t hexlen = strlen(build_id);
    if (!urls || !*urls || hexlen < 2 || hexlen % 2 || !load_debuginfod(b)) return NULL;
    unsigned char bits[64];
    size_t nbits = hexlen / 2;
    if (nbits > sizeof bits) return NULL;
    for (size_t i = 0; i < nbits; i++) {
        unsigned v;
        if (sscanf(build_id + 2 * i, "%2x", &v) != 1) return NULL;
        bits[i] = (unsigned char)v;
    }
    char *path = NULL;
    int fd = b->dbgi_find(b->dbgi_client, bits, (int)nbits, &path);
    if (fd < 0) return NULL;
    close(fd);
    return path; /* malloc'd by libdebuginfod */
}

static void dw_close(void *ctx) {
    dwarf_backend *b = ctx;
    for (size_t i = 0; i < b->nfiles; i++) {
        if (b->files[i].dwfl) b->dw->dwfl_end(b->files[i].dwfl);
        free(b->files[i].path);
    }
    free(b->files);
    free(b->debuginfo_path);
    if (b->dbgi_client) b->dbgi_end(b->dbgi_client);
    free(b);
}

d9_sym_backend *d9_dwarf_backend_new(const char *const *debug_dirs, size_t debug_dir_count,
                                     const char **why) {
    const d9_libdw *dw = d9_libdw_load(why);
    if (!dw) return NULL;
    dwarf_backend *b = calloc(1, sizeof *b);
    if (!b) {
        *why = "out of memory";
        return NULL;
    }
    b->dw = dw;
    /* elfutils' search path: "+" (check the CRC of debuglink files: a debug file of another
     * build is never used, as in debug_file.c), ".debug" next to the file, the system
     * directory, then ours (each also searched under .build-id/). The symbolizer gives the
     * debug file itself when it found one (module.c); this search is for what it did not. */
    size_t len = 64;
    for (size_t i = 0; i < debug_dir_count; i++) len += strlen(debug_dirs[i]) + 1;
    b->debuginfo_path = malloc(len);
    if (!b->debuginfo_path) {
        free(b);
        *why = "out of memory";
        return NULL;
    }
    strcpy(b->debuginfo_path, "+:.debug:/usr/lib/debug");
    for (size_t i = 0; i < debug_dir_count; i++) {
        strcat(b->debuginfo_path, ":");
        strcat(b->debuginfo_path, debug_dirs[i]);
    }
    b->callbacks = (Dwfl_Callbacks){.find_elf = dw->dwfl_build_id_find_elf,
                                    .find_debuginfo = dw->dwfl_standard_find_debuginfo,
                                    .section_address = dw->dwfl_offline_section_address,
                                    .debuginfo_path = &b->debuginfo_path};
    b->base = (d9_sym_backend){.ctx = b, .find_elf = dw_find_elf, .lookup = dw_lookup, .close = dw_close};
    return &b->base;
}
