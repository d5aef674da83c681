#include "model/symtab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t uint_or(const d9_event *ev, int index, uint64_t dflt) {
    uint64_t v;
    return index >= 0 && d9_value_uint(&ev->values[index], &v) ? v : dflt;
}

/* A string field; *unresolved counts a pool reference that was undefined when read. */
static bool str_at(const d9_event *ev, int index, d9_dec_str *out, uint32_t *unresolved) {
    if (index < 0) return false;
    const d9_value *v = &ev->values[index];
    if (v->present && !v->resolved) ++*unresolved;
    return d9_value_str(v, out);
}

bool d9m_symbol_read(const d9_event *ev, d9m_symbol_event *out) {
    const int16_t *f = ev->schema->bind.field;
    memset(out, 0, sizeof *out);
    out->file = (d9_dec_str){"", 0};
    if (ev->schema->bind.role != D9_SCH_SYMBOL_TABLE_ENTRY || f[D9_KF_ADDR] < 0 ||
        !d9_value_uint(&ev->values[f[D9_KF_ADDR]], &out->addr))
        return false;
    bool named = str_at(ev, f[D9_KF_SYMBOL_NAME], &out->name, &out->unresolved);
    if (!str_at(ev, f[D9_KF_SOURCE_FILE], &out->file, &out->unresolved))
        out->file = (d9_dec_str){"", 0};
    if (!named || out->name.len == 0) return false;
    out->size = uint_or(ev, f[D9_KF_SIZE], 0);
    out->line = uint_or(ev, f[D9_KF_SOURCE_LINE], 0);
    out->depth = uint_or(ev, f[D9_KF_INLINE_DEPTH], 0);
    return true;
}

bool d9m_mapping_read(const d9_event *ev, d9m_mapping_event *out) {
    const int16_t *f = ev->schema->bind.field;
    memset(out, 0, sizeof *out);
    out->build_id = (d9_dec_str){"", 0};
    if (ev->schema->bind.role != D9_SCH_MEMORY_MAP) return false;
    bool have_path = str_at(ev, f[D9_KF_PATH], &out->path, &out->unresolved);
    if (!str_at(ev, f[D9_KF_BUILD_ID], &out->build_id, &out->unresolved))
        out->build_id = (d9_dec_str){"", 0};
    if (!have_path) return false;
    out->start = uint_or(ev, f[D9_KF_START], 0);
    out->end = uint_or(ev, f[D9_KF_END], 0);
    out->file_offset = uint_or(ev, f[D9_KF_FILE_OFFSET], 0);
    return out->end > out->start;
}

static uint32_t sat32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

int d9m_symtab_add(d9m_symtab *t, uint64_t addr, uint64_t size, uint32_t name, uint32_t file,
                   uint64_t line, uint64_t depth) {
    uint64_t *first = d9_u64_map_get(&t->by_addr, addr);
    for (uint32_t i = first ? (uint32_t)*first : D9M_NONE; i != D9M_NONE; i = t->syms[i].next)
        if (t->syms[i].depth == sat32(depth)) return 0;
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        d9m_sym *p = realloc(t->syms, (size_t)cap * sizeof *p);
        if (!p) return -1;
        t->syms = p;
        t->cap = cap;
    }
    t->syms[t->count] = (d9m_sym){.addr = addr, .size = size, .name = name, .file = file,
                                  .line = sat32(line), .depth = sat32(depth),
                                  .next = first ? (uint32_t)*first : D9M_NONE};
    if (d9_u64_map_put(&t->by_addr, addr, t->count) != 0) return -1;
    t->count++;
    t->ranges_built = false;
    return 0;
}

static int cmp_range(const void *a, const void *b, void *ctx) {
    const d9m_sym *s = ctx;
    uint64_t x = s[*(const uint32_t *)a].addr, y = s[*(const uint32_t *)b].addr;
    return x < y ? -1 : x > y;
}

static void build_ranges(d9m_symtab *t) {
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
static uint32_t find(d9m_symtab *t, uint64_t addr) {
    uint64_t *first = d9_u64_map_get(&t->by_addr, addr);
    if (first) return (uint32_t)*first;
    if (!t->ranges_built) build_ranges(t);
    uint32_t lo = 0, hi = t->nranges; /* last range with start <= addr */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->syms[t->ranges[mid]].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return D9M_NONE;
    const d9m_sym *s = &t->syms[t->ranges[lo - 1]];
    if (addr - s->addr >= s->size) return D9M_NONE;
    first = d9_u64_map_get(&t->by_addr, s->addr); /* the whole inline chain of that start */
    return first ? (uint32_t)*first : D9M_NONE;
}

uint32_t d9m_symtab_lookup(d9m_symtab *t, uint64_t addr, const d9m_sym **out, uint32_t max) {
    uint32_t head = find(t, addr), n = 0, prev_depth = UINT32_MAX;
    if (head == D9M_NONE) return 0;
    /* the chain, deepest inline level first (selection: chains are short) */
    while (n < max) {
        uint32_t best = D9M_NONE;
        for (uint32_t i = head; i != D9M_NONE; i = t->syms[i].next) {
            uint32_t d = t->syms[i].depth;
            if (d < prev_depth && (best == D9M_NONE || d > t->syms[best].depth)) best = i;
        }
        if (best == D9M_NONE) break;
        out[n++] = &t->syms[best];
        prev_depth = t->syms[best].depth;
        if (prev_depth == 0) break;
    }
    return n;
}

int d9m_symtab_add_mapping(d9m_symtab *t, uint64_t start, uint64_t end, uint64_t file_offset,
                           uint32_t path, uint32_t build_id) {
    if (end <= start) return 0;
    for (uint32_t i = 0; i < t->nmaps; i++) /* few mappings, repeated in every segment */
        if (t->maps[i].start == start && t->maps[i].end == end && t->maps[i].path == path) return 0;
    if (t->nmaps == t->maps_cap) {
        uint32_t cap = t->maps_cap ? t->maps_cap * 2 : 32;
        d9m_mapping *p = realloc(t->maps, (size_t)cap * sizeof *p);
        if (!p) return -1;
        t->maps = p;
        t->maps_cap = cap;
    }
    t->maps[t->nmaps] = (d9m_mapping){start, end, file_offset, path, build_id, t->nmaps};
    t->nmaps++;
    t->maps_sorted = false;
    return 0;
}

static int cmp_map(const void *a, const void *b) {
    const d9m_mapping *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

const d9m_mapping *d9m_symtab_mappings(d9m_symtab *t, uint32_t *count) {
    if (!t->maps_sorted && t->nmaps) qsort(t->maps, t->nmaps, sizeof *t->maps, cmp_map);
    t->maps_sorted = true;
    *count = t->nmaps;
    return t->maps;
}

uint32_t d9m_symtab_mapping_of(d9m_symtab *t, uint64_t addr) {
    uint32_t n;
    const d9m_mapping *maps = d9m_symtab_mappings(t, &n);
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (maps[mid].start <= addr) lo = mid + 1;
        else hi = mid;
    }
    for (uint32_t i = lo; i-- > 0;)
        if (addr < maps[i].end) return i;
    return D9M_NONE;
}

void d9m_symtab_free(d9m_symtab *t) {
    free(t->syms);
    free(t->ranges);
    free(t->maps);
    d9_u64_map_free(&t->by_addr);
    memset(t, 0, sizeof *t);
}
