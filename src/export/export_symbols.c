/* Symbolization of the sampled call stacks (see export_symbols.h). */
#include "export/export_symbols.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void d9_xsymbols_init(d9_xsymbols *s) { memset(s, 0, sizeof *s); }

void d9_xsymbols_free(d9_xsymbols *s) {
    free(s->items);
    free(s->maps);
    memset(s, 0, sizeof *s);
}

static bool reserve(void **arr, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 256;
    void *p = realloc(*arr, c * size);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

int d9_xsymbols_add(d9_xsymbols *s, const d9_xsymbol *sym) {
    if (!reserve((void **)&s->items, &s->cap, s->count, sizeof *s->items)) return -1;
    s->items[s->count++] = *sym;
    return 0;
}

int d9_xsymbols_add_mapping(d9_xsymbols *s, const d9_xmapping *map) {
    if (!reserve((void **)&s->maps, &s->map_cap, s->map_count, sizeof *s->maps)) return -1;
    s->maps[s->map_count++] = *map;
    return 0;
}

static int cmp_symbol(const void *a, const void *b) {
    const d9_xsymbol *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int cmp_mapping(const void *a, const void *b) {
    const d9_xmapping *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Sort, and drop the copies that every segment repeats. */
static void prepare(d9_xsymbols *s) {
    if (s->count) qsort(s->items, s->count, sizeof *s->items, cmp_symbol); /* NULL when none */
    size_t u = 0;
    for (size_t i = 0; i < s->count; i++)
        if (u == 0 || s->items[u - 1].addr != s->items[i].addr ||
            s->items[u - 1].depth != s->items[i].depth)
            s->items[u++] = s->items[i];
    s->count = u;
    if (s->map_count) qsort(s->maps, s->map_count, sizeof *s->maps, cmp_mapping);
    u = 0;
    for (size_t i = 0; i < s->map_count; i++)
        if (u == 0 || cmp_mapping(&s->maps[u - 1], &s->maps[i]) != 0) s->maps[u++] = s->maps[i];
    s->map_count = u;
}

/* First symbol entry with addr >= a (or count). */
static size_t lower_bound(const d9_xsymbols *s, uint64_t a) {
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->items[mid].addr < a) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The entries for address a: [*first, *first + return) with one address, depth ascending.
 * Exact entries first; else the closest entry below a whose size covers a. */
static size_t find_symbol(const d9_xsymbols *s, uint64_t a, size_t *first) {
    size_t i = lower_bound(s, a);
    if (i < s->count && s->items[i].addr == a) {
        size_t j = i;
        while (j < s->count && s->items[j].addr == a) j++;
        *first = i;
        return j - i;
    }
    if (i == 0) return 0;
    uint64_t base = s->items[i - 1].addr;
    size_t j = i - 1;
    while (j > 0 && s->items[j - 1].addr == base) j--;
    if (s->items[j].size == 0 || a - base >= s->items[j].size) return 0;
    *first = j;
    return i - j;
}

static uint32_t find_mapping(const d9_xsymbols *s, uint64_t a) {
    size_t lo = 0, hi = s->map_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->maps[mid].start <= a) lo = mid + 1;
        else hi = mid;
    }
    /* mappings may nest or repeat: look back a little for one that holds a */
    for (size_t k = lo, tries = 0; k-- > 0 && tries < 8; tries++)
        if (a >= s->maps[k].start && a < s->maps[k].end) return (uint32_t)k;
    return D9_XNONE;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The location for address a: found in `seen`, or made with its frames. */
static int location_of(d9_xsymbols *s, d9_xmodel *m, d9_u64_map *seen, uint64_t a,
                       size_t *frame_cap, size_t *loc_cap, uint32_t *out) {
    const uint64_t *known = d9_u64_map_get(seen, a);
    if (known) {
        *out = (uint32_t)*known;
        return 0;
    }
    if (!reserve((void **)&m->locs, loc_cap, m->loc_count, sizeof *m->locs)) return -1;
    d9_xloc *loc = &m->locs[m->loc_count];
    loc->addr = a;
    loc->first_frame = (uint32_t)m->frame_count;
    loc->mapping = find_mapping(s, a);
    size_t first = 0, n = find_symbol(s, a, &first);
    if (n) {
        for (size_t k = first + n; k-- > first;) { /* innermost (deepest inline) first */
            if (!reserve((void **)&m->frames, frame_cap, m->frame_count, sizeof *m->frames))
                return -1;
            const d9_xsymbol *sym = &s->items[k];
            m->frames[m->frame_count++] = (d9_xframe){sym->name, sym->file, sym->line, sym->depth, true};
        }
    } else {
        char name[512];
        if (loc->mapping != D9_XNONE) {
            const d9_xmapping *mp = &s->maps[loc->mapping];
            snprintf(name, sizeof name, "%s+0x%" PRIx64, base_name(d9_xm_str(m, mp->path)),
                     a - mp->start + mp->file_offset);
        } else {
            snprintf(name, sizeof name, "0x%" PRIx64, a);
        }
        uint32_t idx = d9_xstr_intern(&m->strings, name, strlen(name));
        if (idx == D9_XSTR_FAILED ||
            !reserve((void **)&m->frames, frame_cap, m->frame_count, sizeof *m->frames))
            return -1;
        m->frames[m->frame_count++] = (d9_xframe){idx, 0, 0, 0, false};
    }
    loc->frame_count = (uint32_t)(m->frame_count - loc->first_frame);
    *out = (uint32_t)m->loc_count++;
    return d9_u64_map_upsert(seen, a, *out) ? 0 : -1;
}

int d9_xsymbols_resolve(d9_xsymbols *s, d9_xmodel *m, const d9_stack_entry *const *stacks,
                        size_t stack_count, const bool *used) {
    prepare(s);
    m->stacks = calloc(stack_count + 1, sizeof *m->stacks);
    if (!m->stacks) return -1;
    m->stack_count = stack_count;
    size_t total = 0;
    for (size_t i = 0; i < stack_count; i++)
        if (used[i]) total += stacks[i]->count;
    m->stack_locs = malloc((total + 1) * sizeof *m->stack_locs);
    if (!m->stack_locs) return -1;
    d9_u64_map seen = {0};
    size_t frame_cap = 0, loc_cap = 0;
    int rc = 0;
    for (size_t i = 0; i < stack_count && rc == 0; i++) {
        if (!used[i]) continue;
        m->stacks[i].first = (uint32_t)m->stack_loc_count;
        for (uint32_t k = 0; k < stacks[i]->count && rc == 0; k++) {
            uint32_t loc;
            rc = location_of(s, m, &seen, stacks[i]->frames[k], &frame_cap, &loc_cap, &loc);
            if (rc == 0) m->stack_locs[m->stack_loc_count++] = loc;
        }
        m->stacks[i].count = (uint32_t)(m->stack_loc_count - m->stacks[i].first);
    }
    d9_u64_map_free(&seen);
    /* the model owns the mappings from here on */
    m->mappings = s->maps;
    m->mapping_count = s->map_count;
    s->maps = NULL;
    s->map_count = s->map_cap = 0;
    return rc;
}
