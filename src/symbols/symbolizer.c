#include "symbols/symbolizer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host_boot_id.h"
#include "symbols/elf_image.h"
#include "symbols/kallsyms.h"
#include "symbols/kallsyms_cache.h"
#include "symbols/module.h"
#include "symbols/vdso.h"

#define KERNEL_MODULE_NAME "[kernel.kallsyms]"
/* perf's PERF_CONTEXT_* markers live in the last 4095 values of the address space. */
#define PERF_CONTEXT_MIN ((uint64_t)-4095)

typedef struct cached {
    d9_module *m;
    bool reported_missing, reported_note;
} cached;

struct d9_symbolizer {
    d9_sym_options opt;
    d9_module_search search;
    char vdso_build_id[D9_BUILD_ID_HEX_MAX];
    cached *modules;
    size_t nmodules, cap;
    const d9_sym_map *maps;
    size_t nmaps;
    d9_module **map_module; /* per map, filled on first use */
    bool *map_looked_up;
    bool use_kallsyms, kallsyms_tried, kernel_seen;
    d9_kallsyms *ksyms;     /* /proc/kallsyms (or the given file) read whole, when needed */
    bool image_tried;
    d9_kallsyms *kimage;    /* the kernel image's symbols from the cache */
    bool named_from_cache, named_from_whole;
    char cache_dir[4096];   /* "" when not caching */
    char kernel_note[256];
    char kallsyms_error[200];
};

static void find_own_vdso(d9_symbolizer *s) {
    const void *base;
    size_t size;
    if (!d9_own_vdso(&base, &size, s->vdso_build_id, sizeof s->vdso_build_id) || !s->vdso_build_id[0])
        return;
    s->search.vdso_image = base;
    s->search.vdso_size = size;
    s->search.vdso_build_id = s->vdso_build_id;
}

d9_symbolizer *d9_symbolizer_new(const d9_sym_options *opt) {
    d9_symbolizer *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->opt = *opt;
    s->search = (d9_module_search){.debug_dirs = opt->debug_dirs,
                                   .debug_dir_count = opt->debug_dir_count,
                                   .system_debug_dir = opt->system_debug_dir,
                                   .backend = opt->backend};
    find_own_vdso(s);
    if (!opt->kallsyms_path) {
        if (opt->kallsyms_cache_dir) snprintf(s->cache_dir, sizeof s->cache_dir, "%s", opt->kallsyms_cache_dir);
        else d9_kallsyms_cache_dir(s->cache_dir, sizeof s->cache_dir);
    }
    return s;
}

void d9_symbolizer_free(d9_symbolizer *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nmodules; i++) d9_module_free(s->modules[i].m);
    free(s->modules);
    free(s->map_module);
    free(s->map_looked_up);
    d9_kallsyms_free(s->ksyms);
    d9_kallsyms_free(s->kimage);
    free(s);
}

bool d9_symbolizer_set_maps(d9_symbolizer *s, const d9_sym_map *maps, size_t n) {
    free(s->map_module);
    free(s->map_looked_up);
    s->maps = maps;
    s->nmaps = n;
    s->map_module = calloc(n ? n : 1, sizeof *s->map_module);
    s->map_looked_up = calloc(n ? n : 1, sizeof *s->map_looked_up);
    s->kernel_seen = false;
    s->kernel_note[0] = 0;
    if (!s->map_module || !s->map_looked_up) {
        s->nmaps = 0;
        return false;
    }
    return true;
}

void d9_symbolizer_use_kallsyms(d9_symbolizer *s, bool use) { s->use_kallsyms = use; }

static cached *module_entry(d9_symbolizer *s, const d9_sym_map *map) {
    for (size_t i = 0; i < s->nmodules; i++) {
        d9_module *m = s->modules[i].m;
        if (strcmp(m->path, map->path) == 0 && strcmp(m->build_id, map->build_id) == 0) return &s->modules[i];
    }
    if (s->nmodules == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        cached *c = realloc(s->modules, cap * sizeof *c);
        if (!c) return NULL;
        s->modules = c;
        s->cap = cap;
    }
    d9_module *m = d9_module_load(map->path, map->build_id, &s->search);
    if (!m) return NULL;
    s->modules[s->nmodules] = (cached){.m = m};
    return &s->modules[s->nmodules++];
}

static d9_module *module_of(d9_symbolizer *s, size_t map_index) {
    if (!s->map_looked_up[map_index]) {
        s->map_looked_up[map_index] = true;
        cached *c = module_entry(s, &s->maps[map_index]);
        s->map_module[map_index] = c ? c->m : NULL;
    }
    return s->map_module[map_index];
}

static bool is_kernel_map(const d9_sym_map *m) { return strcmp(m->path, KERNEL_MODULE_NAME) == 0; }

static const char *kernel_name(d9_symbolizer *s, uint64_t addr) {
    s->kernel_seen = true;
    if (!s->use_kallsyms) {
        if (!s->kernel_note[0])
            snprintf(s->kernel_note, sizeof s->kernel_note,
                     "kernel addresses left unnamed: the trace comes from another boot");
        return NULL;
    }
    char boot[64] = "";
    if (!s->image_tried && s->cache_dir[0]) { /* the image's symbols, this boot's, from the cache */
        s->image_tried = true;
        char why[200];
        d9_host_boot_id(boot, sizeof boot);
        s->kimage = d9_kallsyms_cache_read(s->cache_dir, boot, why, sizeof why);
    }
    if (d9_kallsyms_covers(s->kimage, addr)) {
        s->named_from_cache = true;
        return d9_kallsyms_lookup(s->kimage, addr);
    }
    if (!s->kallsyms_tried) {
        s->kallsyms_tried = true;
        s->ksyms = d9_kallsyms_load(s->opt.kallsyms_path ? s->opt.kallsyms_path : "/proc/kallsyms",
                                    s->kallsyms_error, sizeof s->kallsyms_error);
        if (s->ksyms && s->cache_dir[0] && !s->kimage) { /* for the next process of this boot */
            if (!boot[0]) d9_host_boot_id(boot, sizeof boot);
            (void)d9_kallsyms_cache_write(s->cache_dir, boot, s->ksyms);
        }
    }
    if (!s->ksyms) {
        snprintf(s->kernel_note, sizeof s->kernel_note, "kernel addresses left unnamed: %s",
                 s->kallsyms_error);
        return NULL;
    }
    s->named_from_whole = true;
    return d9_kallsyms_lookup(s->ksyms, addr);
}

static void set_fallback(d9_sym_result *out, const char *module, uint64_t offset) {
    snprintf(out->fallback, sizeof out->fallback, "%s+0x%" PRIx64, module, offset);
    out->frames[0] = (d9_sym_frame){.name = out->fallback, .file = "", .line = 0};
}

static const char *perf_context_name(uint64_t addr) {
    switch ((int64_t)addr) {
    case -32: return "[perf_context_hv]";
    case -128: return "[perf_context_kernel]";
    case -512: return "[perf_context_user]";
    case -2048: return "[perf_context_guest]";
    case -2176: return "[perf_context_guest_kernel]";
    case -2560: return "[perf_context_guest_user]";
    default: return "[perf_context]";
    }
}

void d9_symbolizer_resolve(d9_symbolizer *s, uint64_t addr, uint64_t flags, d9_sym_result *out) {
    out->count = 1;
    out->named = false;
    /* A return address points after its call: name the call instruction instead. */
    uint64_t look = (flags & D9_ADDR_RETURN) && addr > 0 ? addr - 1 : addr;
    if (addr >= PERF_CONTEXT_MIN) {
        out->named = true;
        out->frames[0] = (d9_sym_frame){.name = perf_context_name(addr), .file = "", .line = 0};
        return;
    }
    const d9_sym_map *map = NULL;
    size_t mi = 0;
    for (size_t i = s->nmaps; i-- > 0;) { /* the latest mapping of a range wins */
        if (addr >= s->maps[i].start && addr < s->maps[i].end) {
            map = &s->maps[i];
            mi = i;
            break;
        }
    }
    if ((map && is_kernel_map(map)) || (!map && addr >= D9_KERNEL_SPACE_START)) {
        const char *name = kernel_name(s, look);
        if (name) {
            out->named = true;
            out->frames[0] = (d9_sym_frame){.name = name, .file = "", .line = 0};
        } else {
            set_fallback(out, KERNEL_MODULE_NAME, addr);
        }
        return;
    }
    if (!map) {
        set_fallback(out, "[unknown]", addr);
        return;
    }
    d9_module *m = module_of(s, mi);
    uint64_t vaddr;
    if (m && m->found && d9_module_vaddr(m, map->start, map->file_offset, look, &vaddr)) {
        const d9_elf_sym *sym = d9_elf_symtab_lookup(&m->syms, vaddr);
        uint32_t n = 0;
        d9_sym_backend *b = s->opt.backend;
        if (b && b->lookup && m->elf_path)
            n = b->lookup(b->ctx, m->elf_path, m->build_id, vaddr, out->frames, D9_SYM_MAX_FRAMES);
        if (n > 0) {
            /* The ELF symbol names the outer function, so names agree with a pass that had
             * no DWARF (the in-process one). */
            if (sym) out->frames[0].name = sym->name;
            out->count = n;
            out->named = out->frames[0].name[0] != 0;
            if (out->named) return;
            /* DWARF knew the line but not the function: keep the line, name it by offset. */
            const char *file = out->frames[0].file;
            uint32_t line = out->frames[0].line;
            const char *slash = strrchr(map->path, '/');
            set_fallback(out, slash ? slash + 1 : map->path, addr - map->start + map->file_offset);
            out->frames[0].file = file;
            out->frames[0].line = line;
            return;
        }
        if (sym) {
            out->frames[0] = (d9_sym_frame){.name = sym->name, .file = "", .line = 0};
            out->named = true;
            return;
        }
    }
    const char *slash = strrchr(map->path, '/');
    set_fallback(out, slash ? slash + 1 : map->path, addr - map->start + map->file_offset);
}

void d9_symbolizer_missing_modules(d9_symbolizer *s,
                                   void (*fn)(const char *path, const char *build_id, void *ctx),
                                   void *ctx) {
    for (size_t i = 0; i < s->nmaps; i++) {
        if (!s->map_looked_up[i] || !s->map_module[i] || s->map_module[i]->found) continue;
        for (size_t j = 0; j < s->nmodules; j++) {
            if (s->modules[j].m != s->map_module[i] || s->modules[j].reported_missing) continue;
            s->modules[j].reported_missing = true;
            fn(s->modules[j].m->path, s->modules[j].m->build_id, ctx);
        }
    }
}

void d9_symbolizer_module_notes(d9_symbolizer *s, void (*fn)(const char *path, const char *note, void *ctx),
                                void *ctx) {
    for (size_t i = 0; i < s->nmaps; i++) {
        if (!s->map_looked_up[i] || !s->map_module[i] || !s->map_module[i]->note[0]) continue;
        for (size_t j = 0; j < s->nmodules; j++) {
            if (s->modules[j].m != s->map_module[i] || s->modules[j].reported_note) continue;
            s->modules[j].reported_note = true;
            fn(s->modules[j].m->path, s->modules[j].m->note, ctx);
        }
    }
}

const char *d9_symbolizer_kernel_note(const d9_symbolizer *s) {
    return s->kernel_seen && !s->ksyms && !s->named_from_cache ? s->kernel_note : "";
}

void d9_symbolizer_kernel_sources(const d9_symbolizer *s, bool *cache, bool *whole) {
    *cache = s->named_from_cache;
    *whole = s->named_from_whole;
}

