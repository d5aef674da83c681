/* Symbolization of the sampled call stacks (see export_symbols.h). */
#include "export/export_symbols.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(void **arr, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 256;
    void *p = realloc(*arr, c * size);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The location for address a: found in `seen`, or made with its frames. */
static int location_of(d9m_symtab *s, d9_xmodel *m, d9_u64_map *seen, uint64_t a,
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
    loc->mapping = d9m_symtab_mapping_of(s, a);
    const d9m_sym *syms[512];
    uint32_t n = d9m_symtab_lookup(s, a, syms, 512);
    if (n) {
        for (uint32_t k = 0; k < n; k++) { /* innermost (deepest inline) first */
            if (!reserve((void **)&m->frames, frame_cap, m->frame_count, sizeof *m->frames))
                return -1;
            const d9m_sym *sym = syms[k];
            m->frames[m->frame_count++] = (d9_xframe){sym->name, sym->file, sym->line,
                                                      sym->depth > 0xffff ? 0xffff : (uint16_t)sym->depth,
                                                      true};
        }
    } else {
        char name[512];
        if (loc->mapping != D9_XNONE) {
            uint32_t nmaps;
            const d9m_mapping *mp = &d9m_symtab_mappings(s, &nmaps)[loc->mapping];
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

/* The one location that stands for the callers a truncated stack did not record. */
static int callers_not_recorded(d9_xmodel *m, size_t *frame_cap, size_t *loc_cap, uint32_t *out) {
    uint32_t name = d9_xstr_intern(&m->strings, D9_X_CALLERS_NOT_RECORDED, strlen(D9_X_CALLERS_NOT_RECORDED));
    if (name == D9_XSTR_FAILED || !reserve((void **)&m->locs, loc_cap, m->loc_count, sizeof *m->locs) ||
        !reserve((void **)&m->frames, frame_cap, m->frame_count, sizeof *m->frames))
        return -1;
    m->locs[m->loc_count] = (d9_xloc){.addr = 0, .first_frame = (uint32_t)m->frame_count, .frame_count = 1,
                                      .mapping = D9_XNONE};
    m->frames[m->frame_count++] = (d9_xframe){name, 0, 0, 0, false};
    *out = (uint32_t)m->loc_count++;
    return 0;
}

int d9_xsymbols_resolve(d9m_symtab *s, d9_xmodel *m, const d9_stack_entry *const *stacks,
                        size_t stack_count, const bool *used, const d9_u64_set *truncated) {
    m->stacks = calloc(stack_count + 1, sizeof *m->stacks);
    if (!m->stacks) return -1;
    m->stack_count = stack_count;
    size_t total = 0;
    for (size_t i = 0; i < stack_count; i++)
        if (used[i]) total += stacks[i]->count + (d9_u64_set_has(truncated, i) ? 1 : 0);
    m->stack_locs = malloc((total + 1) * sizeof *m->stack_locs);
    if (!m->stack_locs) return -1;
    d9_u64_map seen = {0};
    size_t frame_cap = 0, loc_cap = 0;
    uint32_t cut_loc = D9_XNONE; /* made at the first truncated stack */
    int rc = 0;
    for (size_t i = 0; i < stack_count && rc == 0; i++) {
        if (!used[i]) continue;
        m->stacks[i].first = (uint32_t)m->stack_loc_count;
        for (uint32_t k = 0; k < stacks[i]->count && rc == 0; k++) {
            uint32_t loc;
            rc = location_of(s, m, &seen, stacks[i]->frames[k], &frame_cap, &loc_cap, &loc);
            if (rc == 0) m->stack_locs[m->stack_loc_count++] = loc;
        }
        if (rc == 0 && stacks[i]->count && d9_u64_set_has(truncated, i)) {
            if (cut_loc == D9_XNONE) rc = callers_not_recorded(m, &frame_cap, &loc_cap, &cut_loc);
            if (rc == 0) m->stack_locs[m->stack_loc_count++] = cut_loc;
        }
        m->stacks[i].count = (uint32_t)(m->stack_loc_count - m->stacks[i].first);
    }
    d9_u64_map_free(&seen);
    /* the model keeps the mappings (pprof's mapping table) */
    uint32_t nmaps;
    const d9m_mapping *maps = d9m_symtab_mappings(s, &nmaps);
    m->mappings = calloc((size_t)nmaps + 1, sizeof *m->mappings);
    if (!m->mappings) return -1;
    for (uint32_t i = 0; i < nmaps; i++)
        m->mappings[i] = (d9_xmapping){maps[i].start, maps[i].end, maps[i].file_offset,
                                       maps[i].path, maps[i].build_id};
    m->mapping_count = nmaps;
    return rc;
}
