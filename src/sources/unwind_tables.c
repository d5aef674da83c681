#include "sources/unwind_tables.h"

#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sources/cfi_unwind.h"
#include "symbols/debug_file.h"
#include "symbols/elf_image.h"

/* .eh_frame_hdr: version 1, then the encodings of eh_frame_ptr, fde_count and the table.
 * GNU ld, gold and lld all write the table as datarel|sdata4 pairs; other encodings leave the
 * object without tables (its frames are walked with frame pointers). */
#define PE_OMIT 0xff
#define PE_TABLE_DATAREL_SDATA4 0x3b
#define MAX_COPY_BYTES (16u << 20) /* an object's tables; larger ones are not copied */

static uint64_t read_encoded_hdr(const uint8_t *p, const uint8_t *end, uint8_t enc, uint64_t pos_vaddr,
                                 uint64_t hdr_vaddr, size_t *used, bool *ok) {
    uint64_t v = 0;
    size_t n = 0;
    switch (enc & 0x0f) {
    case 0x03: n = 4; break;                                          /* udata4 */
    case 0x0b: n = 4; break;                                          /* sdata4 */
    case 0x04: case 0x0c: case 0x00: n = 8; break;                    /* (s/u)data8, absptr */
    default: *ok = false; return 0;
    }
    if ((size_t)(end - p) < n) {
        *ok = false;
        return 0;
    }
    if (n == 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        v = (enc & 0x0f) == 0x0b ? (uint64_t)(int64_t)(int32_t)w : w;
    } else {
        memcpy(&v, p, 8);
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += pos_vaddr; break; /* pcrel */
    case 0x30: v += hdr_vaddr; break; /* datarel */
    default: *ok = false; return 0;
    }
    *used = n;
    return v;
}

typedef struct build_ctx {
    d9_unwind_tables *t;
    d9_unwind_object *objs;
    size_t nobjs, cap_objs;
    d9_unwind_range *exec;
    size_t nexec, cap_exec;
    uint64_t bytes;
    bool oom;
    char **paths;                  /* per object: its file ("" none), and its build id */
    char (*build_ids)[D9_BUILD_ID_HEX_MAX];
} build_ctx;

static bool push_range(build_ctx *b, uint64_t lo, uint64_t hi) {
    if (b->nexec == b->cap_exec) {
        size_t cap = b->cap_exec ? b->cap_exec * 2 : 64;
        d9_unwind_range *r = realloc(b->exec, cap * sizeof *r);
        if (!r) return false;
        b->exec = r;
        b->cap_exec = cap;
    }
    b->exec[b->nexec++] = (d9_unwind_range){lo, hi};
    return true;
}

/* Copy the object's .eh_frame_hdr through the end of the segment that holds it (.eh_frame
 * follows it there) and check the header. Runs inside dl_iterate_phdr: the object cannot be
 * unloaded meanwhile. */
static void copy_tables(d9_unwind_object *o, const struct dl_phdr_info *info, const ElfW(Phdr) *eh) {
    uint64_t hdr = info->dlpi_addr + eh->p_vaddr;
    const ElfW(Phdr) *seg = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && eh->p_vaddr >= p->p_vaddr && eh->p_vaddr < p->p_vaddr + p->p_memsz)
            seg = p;
    }
    if (!seg || eh->p_memsz < 12) return;
    uint64_t seg_end = info->dlpi_addr + seg->p_vaddr + seg->p_filesz;
    if (seg_end <= hdr + 12) return;
    const uint8_t *h = (const uint8_t *)(uintptr_t)hdr, *hend = (const uint8_t *)(uintptr_t)seg_end;
    if (h[0] != 1 || h[3] != PE_TABLE_DATAREL_SDATA4 || h[1] == PE_OMIT || h[2] == PE_OMIT) return;
    bool ok = true;
    size_t used = 0;
    uint64_t eh_frame = read_encoded_hdr(h + 4, hend, h[1], hdr + 4, hdr, &used, &ok);
    size_t off = 4 + used;
    uint64_t count = ok ? read_encoded_hdr(h + off, hend, h[2], hdr + off, hdr, &used, &ok) : 0;
    off += used;
    if (!ok || count == 0 || count > (seg_end - hdr) / 8) return;
    uint64_t lo = eh_frame < hdr ? eh_frame : hdr;
    uint64_t seg_lo = info->dlpi_addr + seg->p_vaddr;
    if (lo < seg_lo) return; /* .eh_frame outside the header's segment: not the usual layout */
    uint64_t len = seg_end - lo;
    if (len > MAX_COPY_BYTES) return;
    uint8_t *copy = malloc(len);
    if (!copy) return;
    memcpy(copy, (const void *)(uintptr_t)lo, len);
    o->copy = copy;
    o->copy_vaddr = lo;
    o->copy_len = len;
    o->hdr_vaddr = hdr;
    o->table_vaddr = hdr + off;
    o->fde_count = (uint32_t)count;
    if (o->table_vaddr + (uint64_t)o->fde_count * 8 > seg_end) {
        free(copy);
        o->copy = NULL;
    }
}

static int on_object(struct dl_phdr_info *info, size_t size, void *arg) {
    build_ctx *b = arg;
    (void)size;
    d9_unwind_object o;
    memset(&o, 0, sizeof o);
    o.text_lo = UINT64_MAX;
    const ElfW(Phdr) *eh = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_GNU_EH_FRAME) eh = p;
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || p->p_memsz == 0) continue;
        uint64_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (lo < o.text_lo) o.text_lo = lo;
        if (hi > o.text_hi) o.text_hi = hi;
        if (!push_range(b, lo, hi)) b->oom = true;
    }
    if (o.text_lo >= o.text_hi) return 0;
    if (eh) copy_tables(&o, info, eh);
    o.bias = info->dlpi_addr;
    if (b->nobjs == b->cap_objs) {
        size_t cap = b->cap_objs ? b->cap_objs * 2 : 32;
        d9_unwind_object *a = realloc(b->objs, cap * sizeof *a);
        char **paths = a ? realloc(b->paths, cap * sizeof *paths) : NULL;
        if (paths) b->paths = paths;
        char(*ids)[D9_BUILD_ID_HEX_MAX] = paths ? realloc(b->build_ids, cap * sizeof *ids) : NULL;
        if (ids) b->build_ids = ids;
        if (a) b->objs = a;
        if (!a || !paths || !ids) {
            free(o.copy);
            b->oom = true;
            return 0;
        }
        b->cap_objs = cap;
    }
    /* the file and build id, to read .debug_frame after the walk (no file I/O in here) */
    b->build_ids[b->nobjs][0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_NOTE &&
            d9_elf_notes_build_id((const uint8_t *)(uintptr_t)(info->dlpi_addr + p->p_vaddr), p->p_filesz,
                                  b->build_ids[b->nobjs], D9_BUILD_ID_HEX_MAX))
            break;
    }
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : b->nobjs == 0 ? "/proc/self/exe" : "";
    b->paths[b->nobjs] = strdup(name);
    if (!b->paths[b->nobjs]) {
        free(o.copy);
        b->oom = true;
        return 0;
    }
    b->bytes += o.copy_len;
    b->objs[b->nobjs++] = o;
    return 0;
}

static bool copy_debug_frame(d9_unwind_object *o, const d9_elf_image *img) {
    d9_elf_section s;
    const uint8_t *data;
    if (!d9_elf_find_section(img, ".debug_frame", &s) || s.size == 0 || s.size > MAX_COPY_BYTES ||
        !(data = d9_elf_section_data(img, &s)) || !(o->dbg = malloc(s.size)))
        return false;
    memcpy(o->dbg, data, s.size);
    o->dbg_len = s.size;
    if (!d9_cfi_index_debug_frame(o)) o->dbg_len = 0;
    return true;
}

/* The object's .debug_frame from its file, when the file is the loaded object (same build
 * id; an object without one is trusted by path) and has the section; else from its separate
 * debug file (a stripped library's -dbgsym package: debug_file.h), same link-time addresses. */
static void read_debug_frame(d9_unwind_object *o, const char *path, const char *build_id) {
    if (!path[0] || path[0] == '[') return;
    d9_elf_image img, dbg;
    char err[128];
    if (d9_elf_open_path(&img, path, err, sizeof err) != 0) return;
    if (strcmp(img.build_id, build_id) == 0 && !copy_debug_frame(o, &img)) {
        size_t nroots;
        const char *const *roots = d9_debug_roots(&nroots);
        d9_debug_found found;
        if (d9_debug_file_find(path, build_id, &img, roots, nroots, ".debug_frame", &dbg, &found, NULL, 0)) {
            copy_debug_frame(o, &dbg);
            d9_elf_close(&dbg);
        }
    }
    d9_elf_close(&img);
}

static int cmp_obj(const void *x, const void *y) {
    const d9_unwind_object *a = x, *b = y;
    return (a->text_lo > b->text_lo) - (a->text_lo < b->text_lo);
}

static int cmp_range(const void *x, const void *y) {
    const d9_unwind_range *a = x, *b = y;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

typedef struct counters {
    unsigned long long adds, subs;
} counters;

static int first_only(struct dl_phdr_info *info, size_t size, void *arg) {
    counters *c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
    }
    return 1;
}

static void free_objs(d9_unwind_object *objs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(objs[i].copy);
        free(objs[i].dbg);
        free(objs[i].dbg_fdes);
    }
    free(objs);
}

bool d9_unwind_tables_refresh(d9_unwind_tables *t) {
    counters c = {0, 0};
    dl_iterate_phdr(first_only, &c);
    if (t->built && c.adds == t->adds && c.subs == t->subs) return true;
    build_ctx b;
    memset(&b, 0, sizeof b);
    b.t = t;
    dl_iterate_phdr(on_object, &b);
    for (size_t i = 0; i < b.nobjs && !b.oom; i++) {
        read_debug_frame(&b.objs[i], b.paths[i], b.build_ids[i]);
        b.bytes += b.objs[i].dbg_len + (uint64_t)b.objs[i].dbg_count * sizeof(d9_dbg_fde);
    }
    for (size_t i = 0; i < b.nobjs; i++) free(b.paths[i]);
    free(b.paths);
    free(b.build_ids);
    if (b.oom) {
        free_objs(b.objs, b.nobjs);
        free(b.exec);
        return false;
    }
    qsort(b.objs, b.nobjs, sizeof *b.objs, cmp_obj);
    qsort(b.exec, b.nexec, sizeof *b.exec, cmp_range);
    free_objs(t->objs, t->nobjs);
    free(t->exec);
    t->objs = b.objs;
    t->nobjs = b.nobjs;
    t->exec = b.exec;
    t->nexec = b.nexec;
    t->bytes = b.bytes;
    t->adds = c.adds;
    t->subs = c.subs;
    t->built = true;
    t->generation++; /* the row cache is stale */
    return true;
}

void d9_unwind_tables_free(d9_unwind_tables *t) {
    free(t->row_cache);
    free_objs(t->objs, t->nobjs);
    free(t->exec);
    memset(t, 0, sizeof *t);
}

const d9_unwind_object *d9_unwind_tables_find(const d9_unwind_tables *t, uint64_t pc) {
    size_t lo = 0, hi = t->nobjs;
    while (lo < hi) { /* the last object starting at or below pc */
        size_t mid = lo + (hi - lo) / 2;
        if (t->objs[mid].text_lo <= pc) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    const d9_unwind_object *o = &t->objs[lo - 1];
    return pc < o->text_hi ? o : NULL;
}

bool d9_unwind_tables_is_code(const d9_unwind_tables *t, uint64_t addr) {
    size_t lo = 0, hi = t->nexec;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->exec[mid].lo <= addr) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && addr < t->exec[lo - 1].hi;
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static d9_unwind_tables g_tables;

d9_unwind_tables *d9_unwind_tables_acquire(void) {
    pthread_mutex_lock(&g_lock);
    if (!d9_unwind_tables_refresh(&g_tables) && !g_tables.built) {
        pthread_mutex_unlock(&g_lock);
        return NULL;
    }
    return &g_tables;
}

void d9_unwind_tables_release(void) { pthread_mutex_unlock(&g_lock); }

void d9_unwind_tables_forget_after_fork(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_lock = fresh; /* the tables themselves are still valid: same mappings in the child */
}
