#include "symbols/module.h"

#include "symbols/debug_file.h"

#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_MASK_4K (~(uint64_t)0xfff)

/* A loadable file carries its executable segment's bytes; a separate debug file keeps the
 * program headers but not the code (p_filesz 0). */
static bool has_file_code(const d9_elf_image *img) {
    for (size_t i = 0; i < img->load_count; i++) {
        const d9_elf_segment *s = &img->loads[i];
        if ((s->flags & PF_X) && s->filesz > 0 && s->offset <= img->size && s->filesz <= img->size - s->offset)
            return true;
    }
    return false;
}

static bool has_section(const d9_elf_image *img, const char *name) {
    d9_elf_section s;
    return d9_elf_find_section(img, name, &s) && s.type != SHT_NOBITS && s.size > 0;
}

/* Open `file` when it is an ELF whose build id is `build_id` (any ELF when we have no build
 * id to compare: only for the recorded path itself). `want_code` asks for a loadable file. */
static bool open_matching(d9_elf_image *img, const char *file, const char *build_id, bool want_code) {
    if (d9_elf_open_path(img, file, NULL, 0) != 0) return false;
    bool ok = (!build_id[0] || strcmp(img->build_id, build_id) == 0) && (!want_code || has_file_code(img));
    if (!ok) d9_elf_close(img);
    return ok;
}

static bool try_binary(d9_module *m, const char *file, const char *how) {
    if (!m->build_id[0] && strcmp(file, m->path) != 0) return false;
    if (!open_matching(&m->binary, file, m->build_id, true)) return false;
    m->have_binary = true;
    free(m->elf_path);
    m->elf_path = strdup(file);
    snprintf(m->where, sizeof m->where, "%s", how);
    return true;
}

static bool try_debug(d9_module *m, const char *file) {
    if (!m->build_id[0] || !open_matching(&m->debug, file, m->build_id, false)) return false;
    if (!has_section(&m->debug, ".symtab")) {
        d9_elf_close(&m->debug);
        return false;
    }
    m->have_debug = true;
    free(m->debug_path);
    m->debug_path = strdup(file);
    return true;
}

/* "{dir}/.build-id/xx/yyyy{suffix}" */
static void build_id_path(char *out, size_t len, const char *dir, const char *sub, const char *bid,
                          const char *suffix) {
    snprintf(out, len, "%s%s/%.2s/%s%s", dir, sub, bid, bid + 2, suffix);
}

static void find_binary(d9_module *m, const d9_module_search *s) {
    char p[PATH_MAX];
    const char *bid = m->build_id;
    if (m->path[0] == '/' && try_binary(m, m->path, "path")) return;
    if (!bid[0] || strlen(bid) < 4) return;
    for (size_t i = 0; i < s->debug_dir_count; i++) {
        const char *d = s->debug_dirs[i];
        snprintf(p, sizeof p, "%s/%s", d, m->basename);
        if (m->path[0] == '/' && try_binary(m, p, "debug-dir")) return;
        snprintf(p, sizeof p, "%s%s", d, m->path);
        if (m->path[0] == '/' && try_binary(m, p, "debug-dir")) return;
        build_id_path(p, sizeof p, d, "/.build-id", bid, "");
        if (try_binary(m, p, "debug-dir build-id")) return;
    }
    if (s->system_debug_dir) {
        size_t nroots;
        const char *const *roots = d9_debug_roots(&nroots);
        for (size_t i = 0; i < nroots; i++) {
            build_id_path(p, sizeof p, roots[i], "/.build-id", bid, "");
            if (try_binary(m, p, "build-id")) return;
        }
    }
    if (s->backend && s->backend->find_elf) {
        char *f = s->backend->find_elf(s->backend->ctx, bid, m->path);
        bool ok = f && try_binary(m, f, "backend");
        free(f);
        if (ok) return;
    }
}

/* The separate debug file (docs/symbols.md): by build id and .gnu_debuglink under the system's
 * debug roots (DIAL9_DEBUG_FILE_DIRS, else /usr/lib/debug) and the user's directories, then
 * the user's directories' "DIR/xx/yyyy.debug". `want`: the section it must bring. */
static void find_debug(d9_module *m, const d9_module_search *s, const char *want) {
    const char *roots[D9_DEBUG_ROOTS_MAX + 32];
    size_t n = 0;
    if (s->system_debug_dir) {
        size_t nsys;
        const char *const *sys = d9_debug_roots(&nsys);
        for (size_t i = 0; i < nsys; i++) roots[n++] = sys[i];
    }
    for (size_t i = 0; i < s->debug_dir_count && n < sizeof roots / sizeof roots[0]; i++) roots[n++] = s->debug_dirs[i];
    d9_debug_found found;
    if (d9_debug_file_find(m->path, m->build_id, m->have_binary ? &m->binary : NULL, roots, n, want, &m->debug,
                           &found, m->note, sizeof m->note)) {
        m->have_debug = true;
        m->debug_path = strdup(found.path);
        m->note[0] = 0;
        snprintf(m->debug_how, sizeof m->debug_how, "%s", found.how);
        return;
    }
    char p[PATH_MAX];
    const char *bid = m->build_id;
    if (!bid[0] || strlen(bid) < 4) return;
    for (size_t i = 0; i < s->debug_dir_count; i++) {
        build_id_path(p, sizeof p, s->debug_dirs[i], "", bid, ".debug");
        if (try_debug(m, p)) {
            m->note[0] = 0;
            snprintf(m->debug_how, sizeof m->debug_how, "build-id");
            return;
        }
    }
}

static void load_symbols(d9_module *m) {
    long from_symtab = 0;
    if (m->have_binary) from_symtab = d9_elf_symtab_add(&m->syms, &m->binary, ".symtab");
    if (from_symtab == 0 && m->have_debug) d9_elf_symtab_add(&m->syms, &m->debug, ".symtab");
    if (m->have_binary) d9_elf_symtab_add(&m->syms, &m->binary, ".dynsym");
    d9_elf_symtab_finish(&m->syms);
}

d9_module *d9_module_load(const char *path, const char *build_id, const d9_module_search *s) {
    d9_module *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->path = strdup(path);
    m->build_id = strdup(build_id);
    if (!m->path || !m->build_id) {
        d9_module_free(m);
        return NULL;
    }
    const char *slash = strrchr(m->path, '/');
    m->basename = slash ? slash + 1 : m->path;

    if (strcmp(path, "[vdso]") == 0 && s->vdso_image && s->vdso_build_id &&
        strcmp(s->vdso_build_id, build_id) == 0 &&
        d9_elf_open_mem(&m->binary, s->vdso_image, s->vdso_size, NULL, 0) == 0) {
        m->have_binary = true;
        snprintf(m->where, sizeof m->where, "vdso");
    } else {
        find_binary(m, s);
    }
    /* A stripped binary keeps only .dynsym: look for its debug file's .symtab too; one with
     * symbols but no DWARF, for file:line when a backend reads DWARF. */
    if (!m->have_binary || !has_section(&m->binary, ".symtab")) find_debug(m, s, ".symtab");
    else if (s->backend && !has_section(&m->binary, ".debug_info")) find_debug(m, s, ".debug_info");
    if (!m->have_binary && m->have_debug) snprintf(m->where, sizeof m->where, "debug file only");
    else if (m->have_binary && m->have_debug) {
        size_t n = strlen(m->where);
        snprintf(m->where + n, sizeof m->where - n, "+debug (%s)", m->debug_how);
    }
    /* The backend reads DWARF from the debug file when the binary has none. */
    if (m->have_debug && (!m->have_binary || !has_section(&m->binary, ".debug_info")) &&
        has_section(&m->debug, ".debug_info") && m->debug_path) {
        free(m->elf_path);
        m->elf_path = strdup(m->debug_path);
    } else if (!m->elf_path && m->debug_path) {
        m->elf_path = strdup(m->debug_path);
    }
    m->found = m->have_binary || m->have_debug;
    if (m->found) load_symbols(m);
    return m;
}

void d9_module_free(d9_module *m) {
    if (!m) return;
    if (m->have_binary) d9_elf_close(&m->binary);
    if (m->have_debug) d9_elf_close(&m->debug);
    d9_elf_symtab_free(&m->syms);
    free(m->path);
    free(m->build_id);
    free(m->elf_path);
    free(m->debug_path);
    free(m);
}

bool d9_module_vaddr(const d9_module *m, uint64_t map_start, uint64_t map_file_offset, uint64_t addr,
                     uint64_t *vaddr) {
    if (addr < map_start) return false;
    uint64_t file_off = addr - map_start + map_file_offset;
    if (m->have_binary) {
        for (size_t i = 0; i < m->binary.load_count; i++) {
            const d9_elf_segment *s = &m->binary.loads[i];
            if (file_off >= s->offset && file_off - s->offset < s->filesz) {
                *vaddr = file_off - s->offset + s->vaddr;
                return true;
            }
        }
        return false;
    }
    if (m->have_debug) {
        /* The debug file's program headers lost the file offsets. The loader mapped the
         * executable segment's first page at the mapping's start, so the mapping starts at
         * that segment's page-aligned address (we take the first executable segment). */
        for (size_t i = 0; i < m->debug.load_count; i++) {
            const d9_elf_segment *s = &m->debug.loads[i];
            if (!(s->flags & PF_X)) continue;
            *vaddr = addr - map_start + (s->vaddr & PAGE_MASK_4K);
            return true;
        }
    }
    return false;
}
