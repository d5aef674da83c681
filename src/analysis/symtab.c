#include "analysis/symtab.h"

#include <stdlib.h>
#include <string.h>

int d9a_symtab_add(d9a_symtab *t, uint64_t addr, uint64_t size, const char *name, size_t name_len,
                   const char *file, size_t file_len, uint64_t line, uint64_t depth) {
    uint64_t *first = d9_u64_map_get(&t->by_addr, addr);
    for (uint32_t i = first ? *first : UINT32_MAX; i != UINT32_MAX; i = t->syms[i].next)
        if (t->syms[i].depth == depth) return 0;
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        d9a_sym *p = realloc(t->syms, (size_t)cap * sizeof *p);
        if (!p) return -1;
        t->syms = p;
        t->cap = cap;
    }
    uint32_t name_id = d9a_strings_intern(t->strings, name, name_len);
    uint32_t file_id = d9a_strings_intern(t->strings, file ? file : "", file ? file_len : 0);
    if (name_id == UINT32_MAX || file_id == UINT32_MAX) return -1;
    d9a_sym *s = &t->syms[t->count];
    *s = (d9a_sym){.addr = addr, .size = size, .name = name_id, .file = file_id,
                   .line = line > UINT32_MAX ? UINT32_MAX : (uint32_t)line,
                   .depth = depth > UINT32_MAX ? UINT32_MAX : (uint32_t)depth,
                   .next = first ? *first : UINT32_MAX};
    if (d9_u64_map_put(&t->by_addr, addr, t->count) != 0) return -1;
    t->count++;
    t->ranges_built = false;
    return 0;
}

static int cmp_range(const void *a, const void *b, void *ctx) {
    const d9a_sym *s = ctx;
    uint64_t x = s[*(const uint32_t *)a].addr, y = s[*(const uint32_t *)b].addr;
    return x < y ? -1 : x > y;
}

static void build_ranges(d9a_symtab *t) {
    free(t->ranges);
    t->ranges = NULL;
    t->nranges = 0;
    t->ranges_built = true;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count; i++)
        if (t->syms[i].size > 0 && t->syms[i].depth == 0) n++;
    if (n == 0 || !(t->ranges = malloc((size_t)n * sizeof *t->ranges))) return;
    for (uint32_t i = 0; i < t->count; i++)
        if (t->syms[i].size > 0 && t->syms[i].depth == 0) t->ranges[t->nranges++] = i;
    qsort_r(t->ranges, t->nranges, sizeof *t->ranges, cmp_range, t->syms);
}

/* The first entry (of the chain) that covers addr: exact, else by range. */
static uint32_t find(d9a_symtab *t, uint64_t addr) {
    uint64_t *first = d9_u64_map_get(&t->by_addr, addr);
    if (first) return *first;
    if (!t->ranges_built) build_ranges(t);
    uint32_t lo = 0, hi = t->nranges; /* last range with start <= addr */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->syms[t->ranges[mid]].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return UINT32_MAX;
    const d9a_sym *s = &t->syms[t->ranges[lo - 1]];
    if (addr - s->addr >= s->size) return UINT32_MAX;
    first = d9_u64_map_get(&t->by_addr, s->addr); /* the whole inline chain of that start */
    return first ? *first : UINT32_MAX;
}

int d9a_symtab_add_mapping(d9a_symtab *t, uint64_t start, uint64_t end, uint64_t file_offset,
                           const char *path, size_t path_len) {
    if (end <= start) return 0;
    uint32_t id = d9a_strings_intern(t->strings, path, path_len);
    if (id == UINT32_MAX) return -1;
    for (uint32_t i = 0; i < t->nmaps; i++) /* few mappings, repeated in every segment */
        if (t->maps[i].start == start && t->maps[i].end == end && t->maps[i].path == id) return 0;
    if (t->nmaps == t->maps_cap) {
        uint32_t cap = t->maps_cap ? t->maps_cap * 2 : 32;
        struct d9a_mapping *p = realloc(t->maps, (size_t)cap * sizeof *p);
        if (!p) return -1;
        t->maps = p;
        t->maps_cap = cap;
    }
    t->maps[t->nmaps++] = (struct d9a_mapping){start, end, file_offset, id};
    t->maps_sorted = false;
    return 0;
}

static int cmp_map(const void *a, const void *b) {
    const struct d9a_mapping *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static const struct d9a_mapping *find_mapping(d9a_symtab *t, uint64_t addr) {
    if (t->nmaps == 0) return NULL;
    if (!t->maps_sorted) {
        qsort(t->maps, t->nmaps, sizeof *t->maps, cmp_map);
        t->maps_sorted = true;
    }
    uint32_t lo = 0, hi = t->nmaps;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->maps[mid].start <= addr) lo = mid + 1;
        else hi = mid;
    }
    /* mappings may overlap after a remap: look back for one that covers addr */
    for (uint32_t i = lo; i-- > 0;)
        if (addr < t->maps[i].end) return &t->maps[i];
    return NULL;
}

uint32_t d9a_symtab_expand(d9a_symtab *t, uint64_t addr, d9a_frame *out, uint32_t max) {
    if (max == 0) return 0;
    bool kernel = d9a_is_kernel_addr(addr);
    const struct d9a_mapping *m = kernel ? NULL : find_mapping(t, addr);
    const char *object = m ? d9a_strings_get(t->strings, m->path) : NULL;
    uint64_t object_offset = m ? addr - m->start + m->file_offset : 0;
    uint32_t head = find(t, addr);
    if (head == UINT32_MAX) {
        out[0] = (d9a_frame){.addr = addr, .kernel = kernel, .object = object,
                             .object_offset = object_offset};
        return 1;
    }
    /* collect the chain, deepest inline level first (selection: chains are short) */
    uint32_t n = 0;
    uint32_t prev_depth = UINT32_MAX;
    for (;;) {
        uint32_t best = UINT32_MAX;
        for (uint32_t i = head; i != UINT32_MAX; i = t->syms[i].next) {
            uint32_t d = t->syms[i].depth;
            if (d < prev_depth && (best == UINT32_MAX || d > t->syms[best].depth)) best = i;
        }
        if (best == UINT32_MAX || n == max) break;
        const d9a_sym *s = &t->syms[best];
        out[n++] = (d9a_frame){.addr = addr,
                               .symbol = d9a_strings_get(t->strings, s->name),
                               .file = d9a_strings_get(t->strings, s->file),
                               .line = s->line,
                               .inlined = s->depth > 0,
                               .kernel = kernel,
                               .object = object,
                               .object_offset = object_offset};
        prev_depth = s->depth;
        if (prev_depth == 0) break;
    }
    return n;
}

void d9a_symtab_free(d9a_symtab *t) {
    free(t->syms);
    free(t->ranges);
    free(t->maps);
    d9_u64_map_free(&t->by_addr);
    memset(t, 0, sizeof *t);
}
