/* The memory-map source. /proc/self/maps is read at start, at every segment start (the whole
 * map goes into each segment, so each file can be symbolized alone; the first segment, which
 * begins within the start, reuses the start's read unless the loader changed) and when the dynamic
 * loader's counters say a library came or went. Checking those counters is one
 * dl_iterate_phdr callback per drain: no file is read while nothing changes. Build ids are
 * read once per (device, inode, path): from the notes of the image in memory for what the
 * dynamic loader mapped (no file read, and the id of the code that runs even when its file
 * was replaced on disk since), from the file for anything else. */
#include "sources/memory_map.h"

#include <stddef.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/source.h"
#include "symbols/elf_image.h"
#include "symbols/kallsyms.h"
#include "symbols/vdso.h"

#define KERNEL_PATH "[kernel.kallsyms]"
/* Where x86-64 user space ends: the legacy [vsyscall] page sits above the kernel's start. */
#define KERNEL_END 0xffffffffff600000ull

typedef struct mapping {
    uint64_t start, end, offset;
    uint64_t dev, inode;
    char *path;
    const char *build_id; /* owned by the cache (or a static "") */
} mapping;

typedef struct known_file {
    uint64_t dev, inode;
    char *path;
    char build_id[D9_BUILD_ID_HEX_MAX];
} known_file;

typedef struct mm_source {
    d9_source base;
    mapping *maps; /* the current executable mappings, in address order */
    size_t nmaps;
    known_file **files;
    size_t nfiles, files_cap;
    unsigned long long adds, subs; /* the loader's counters when maps was read */
    bool fresh;                    /* maps was read by the start, no segment began since */
    char vdso_build_id[D9_BUILD_ID_HEX_MAX];
    char kernel_build_id[D9_BUILD_ID_HEX_MAX];
} mm_source;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ build ids in memory */

/* An object the dynamic loader mapped: the span of its loaded segments and its build id. */
typedef struct loaded_image {
    uint64_t lo, hi;
    char build_id[D9_BUILD_ID_HEX_MAX];
} loaded_image;

typedef struct loaded_images {
    loaded_image *v;
    size_t n, cap;
    bool listed; /* dl_iterate_phdr done: at the first build id not cached yet */
} loaded_images;

/* Whether [vaddr, vaddr + size) lies in a readable segment's file-backed part. */
static bool in_readable_load(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t size) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && vaddr >= ph->p_vaddr &&
            vaddr - ph->p_vaddr <= ph->p_filesz && size <= ph->p_filesz - (vaddr - ph->p_vaddr))
            return true;
    }
    return false;
}

static int add_loaded_image(struct dl_phdr_info *info, size_t size, void *ctx) {
    (void)size;
    loaded_images *imgs = ctx;
    loaded_image img = {.lo = UINT64_MAX};
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
            if (lo < img.lo) img.lo = lo;
            if (hi > img.hi) img.hi = hi;
        } else if (ph->p_type == PT_NOTE && !img.build_id[0] && in_readable_load(info, ph->p_vaddr, ph->p_memsz)) {
            const uint8_t *notes = (const uint8_t *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr);
            d9_elf_notes_build_id(notes, ph->p_memsz, img.build_id, sizeof img.build_id);
        }
    }
    if (!img.build_id[0] || img.lo >= img.hi) return 0;
    if (imgs->n == imgs->cap) {
        size_t cap = imgs->cap ? imgs->cap * 2 : 32;
        loaded_image *v = realloc(imgs->v, cap * sizeof *v);
        if (!v) return 0; /* that object's id is read from its file */
        imgs->v = v;
        imgs->cap = cap;
    }
    imgs->v[imgs->n++] = img;
    return 0;
}

/* The build id of the loaded object whose segments span `addr`, or NULL. */
static const char *loaded_build_id(loaded_images *imgs, uint64_t addr) {
    if (!imgs->listed) {
        dl_iterate_phdr(add_loaded_image, imgs);
        imgs->listed = true;
    }
    for (size_t i = 0; i < imgs->n; i++)
        if (addr >= imgs->v[i].lo && addr < imgs->v[i].hi) return imgs->v[i].build_id;
    return NULL;
}

/* ------------------------------------------------------------------ build ids */

static const char *build_id_of(mm_source *s, const char *path, uint64_t dev, uint64_t inode, uint64_t start,
                               loaded_images *imgs) {
    if (strcmp(path, "[vdso]") == 0) return s->vdso_build_id;
    if (path[0] != '/') return "";
    for (size_t i = 0; i < s->nfiles; i++) {
        known_file *f = s->files[i];
        if (f->dev == dev && f->inode == inode && strcmp(f->path, path) == 0) return f->build_id;
    }
    if (s->nfiles == s->files_cap) {
        size_t cap = s->files_cap ? s->files_cap * 2 : 64;
        known_file **a = realloc(s->files, cap * sizeof *a);
        if (!a) return "";
        s->files = a;
        s->files_cap = cap;
    }
    /* Each entry is its own allocation: mappings keep pointers to its build id. */
    known_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return "";
    }
    f->dev = dev;
    f->inode = inode;
    const char *in_memory = loaded_build_id(imgs, start);
    if (in_memory) snprintf(f->build_id, sizeof f->build_id, "%s", in_memory);
    /* Not the loader's (mapped by hand): from the file, which may have been replaced on
     * disk since (a package upgrade); the inode check above keeps a stale entry out. */
    else d9_elf_file_build_id(path, f->build_id, sizeof f->build_id);
    s->files[s->nfiles++] = f;
    return f->build_id;
}

static void read_kernel_build_id(mm_source *s) {
    FILE *f = fopen("/sys/kernel/notes", "re");
    if (!f) return;
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    d9_elf_notes_build_id(buf, n, s->kernel_build_id, sizeof s->kernel_build_id);
}

/* ------------------------------------------------------------------ /proc/self/maps */

static void free_maps(mapping *m, size_t n) {
    for (size_t i = 0; i < n; i++) free(m[i].path);
    free(m);
}

/* Parse one line; false when it is not an executable mapping we report. */
static bool parse_line(char *line, mapping *out) {
    /* "start-end perms ...": most lines are data; they need no sscanf (~2 µs each) */
    const char *perms_at = strchr(line, ' ');
    if (!perms_at || strnlen(perms_at, 4) < 4 || perms_at[3] != 'x') return false;
    unsigned long long start, end, offset, inode;
    unsigned int major, minor;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &offset, &major,
               &minor, &inode, &path_at) < 7)
        return false;
    if (strlen(perms) < 3 || perms[2] != 'x' || path_at <= 0) return false;
    char *path = line + path_at;
    path[strcspn(path, "\n")] = 0;
    if (!*path) return false; /* anonymous code (a JIT): nothing to symbolize it with */
    size_t len = strlen(path);
    static const char deleted[] = " (deleted)";
    if (len > sizeof deleted - 1 && strcmp(path + len - (sizeof deleted - 1), deleted) == 0)
        path[len - (sizeof deleted - 1)] = 0; /* keep the name the file had */
    *out = (mapping){.start = start, .end = end, .offset = offset,
                     .dev = (uint64_t)major << 32 | minor, .inode = inode, .path = strdup(path)};
    return out->path != NULL;
}

/* dl_iterate_phdr's counters (objects ever loaded / unloaded) are the same in every
 * callback: read them from the first one and stop. */
static int first_counters(struct dl_phdr_info *info, size_t size, void *ctx) {
    unsigned long long *c = ctx;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return 1;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

static void loader_counters(unsigned long long c[2]) {
    c[0] = c[1] = 0;
    dl_iterate_phdr(first_counters, c);
}

/* Read the executable mappings; false (and nothing changed) when the file cannot be read. */
static bool read_maps(mm_source *s) {
    /* The counters first: a change racing with the read is then seen again next time. */
    unsigned long long counters[2];
    loader_counters(counters);

    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return false;
    loaded_images imgs = {0}; /* listed only when a build id is not cached yet */
    mapping *maps = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t line_cap = 0;
    bool ok = true;
    while (getline(&line, &line_cap, f) > 0) {
        mapping m;
        if (!parse_line(line, &m)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            mapping *g = realloc(maps, cap * sizeof *g);
            if (!g) {
                free(m.path);
                ok = false;
                break;
            }
            maps = g;
        }
        m.build_id = build_id_of(s, m.path, m.dev, m.inode, m.start, &imgs);
        maps[n++] = m;
    }
    free(line);
    fclose(f);
    free(imgs.v);
    if (!ok) {
        free_maps(maps, n);
        return false;
    }
    free_maps(s->maps, s->nmaps);
    s->maps = maps;
    s->nmaps = n;
    s->adds = counters[0];
    s->subs = counters[1];
    return true;
}

/* ------------------------------------------------------------------ events */

static void emit(d9_src_batch *out, uint64_t ts, uint64_t start, uint64_t end, uint64_t offset,
                 const char *path, const char *build_id) {
    d9_src_event ev = {.ts_ns = ts, .kind = D9_SRC_MMAP, .tid = 0, .cpu = -1};
    ev.map.start = start;
    ev.map.end = end;
    ev.map.file_offset = offset;
    ev.map.path = path;
    ev.map.build_id = build_id;
    d9_src_batch_add(out, &ev);
}

static void emit_mapping(d9_src_batch *out, uint64_t ts, const mapping *m) {
    emit(out, ts, m->start, m->end, m->offset, m->path, m->build_id);
}

static bool same_mapping(const mapping *a, const mapping *b) {
    return a->start == b->start && a->end == b->end && a->offset == b->offset &&
           a->inode == b->inode && a->dev == b->dev && strcmp(a->path, b->path) == 0;
}

static void mm_segment_start(d9_source *src, d9_src_batch *out) {
    mm_source *s = src->ctx;
    /* The first segment begins within the same start that just read the maps: read again only
     * if the loader changed something meanwhile. Later segments read them again. */
    unsigned long long counters[2];
    if (s->fresh) loader_counters(counters);
    if (!s->fresh || counters[0] != s->adds || counters[1] != s->subs)
        read_maps(s); /* on failure, the last map we read is still the best we know */
    s->fresh = false;
    uint64_t ts = now_ns();
    for (size_t i = 0; i < s->nmaps; i++) emit_mapping(out, ts, &s->maps[i]);
    /* The kernel as a pseudo module: tells readers which addresses are the kernel's, and
     * which kernel build they belong to. */
    emit(out, ts, D9_KERNEL_SPACE_START, KERNEL_END, 0, KERNEL_PATH, s->kernel_build_id);
}

static void mm_collect(d9_source *src, d9_src_batch *out) {
    mm_source *s = src->ctx;
    unsigned long long counters[2];
    loader_counters(counters);
    if (counters[0] == s->adds && counters[1] == s->subs) return;
    mapping *old = s->maps;
    size_t nold = s->nmaps;
    s->maps = NULL;
    s->nmaps = 0;
    if (!read_maps(s)) {
        s->maps = old;
        s->nmaps = nold;
        return;
    }
    uint64_t ts = now_ns();
    /* Both lists are in address order: one merge pass finds the new mappings. */
    size_t j = 0;
    for (size_t i = 0; i < s->nmaps; i++) {
        const mapping *m = &s->maps[i];
        while (j < nold && old[j].start < m->start) j++;
        bool known = false;
        for (size_t k = j; k < nold && old[k].start == m->start && !known; k++) known = same_mapping(&old[k], m);
        if (!known) emit_mapping(out, ts, m);
    }
    free_maps(old, nold);
}

static void mm_close(d9_source *src) {
    mm_source *s = src->ctx;
    free_maps(s->maps, s->nmaps);
    for (size_t i = 0; i < s->nfiles; i++) {
        free(s->files[i]->path);
        free(s->files[i]);
    }
    free(s->files);
    free(s);
}

void d9_memory_map_source_start(const d9_config *cfg, d9_collector *c) {
    (void)cfg; /* always on: without maps, no trace can be symbolized once the process is gone */
    mm_source *s = calloc(1, sizeof *s);
    if (!s) {
        d9_collector_note_source(c, "memory_map", false, "out of memory");
        return;
    }
    s->base = (d9_source){.name = "memory_map", .collect = mm_collect,
                          .segment_start = mm_segment_start, .close = mm_close, .ctx = s};
    const void *base;
    size_t size;
    d9_own_vdso(&base, &size, s->vdso_build_id, sizeof s->vdso_build_id);
    read_kernel_build_id(s);
    if (!read_maps(s)) {
        mm_close(&s->base);
        d9_collector_note_source(c, "memory_map", false, "/proc/self/maps cannot be read");
        return;
    }
    s->fresh = true;
    if (!d9_collector_add_source(c, &s->base)) {
        mm_close(&s->base);
        d9_collector_note_source(c, "memory_map", false, "too many data sources");
        return;
    }
    size_t with_id = 0;
    for (size_t i = 0; i < s->nmaps; i++) with_id += s->maps[i].build_id[0] != 0;
    char detail[96];
    snprintf(detail, sizeof detail, "%zu executable mappings, %zu with a build id", s->nmaps, with_id);
    d9_collector_note_source(c, "memory_map", true, detail);
}
