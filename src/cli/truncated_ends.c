#include "cli/truncated_ends.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/schemas.h"

void d9_truncated_ends_note(d9_truncated_ends *t, const uint64_t *addrs, uint32_t count) {
    if (!addrs || count == 0) return;
    uint64_t *n = d9_u64_map_upsert(&t->count_by_end, addrs[count - 1], 0);
    if (!n) {
        t->oom = true;
        return;
    }
    (*n)++;
    t->stacks++;
}

static uint32_t intern(d9_truncated_ends *t, d9_dec_str s) {
    uint32_t id = d9a_strings_intern(&t->strings, s.ptr ? s.ptr : "", s.ptr ? s.len : 0);
    if (id == UINT32_MAX) t->oom = true;
    return id;
}

void d9_truncated_ends_note_symbols(d9_truncated_ends *t, const d9_event *ev) {
    /* A segment's symbols follow its stacks (appended when it is sealed): none are needed
     * before the first truncated stack. Its memory maps come first, and are few. */
    if (ev->schema->bind.role == D9_SCH_SYMBOL_TABLE_ENTRY && t->stacks > 0) {
        d9m_symbol_event e;
        if (!d9m_symbol_read(ev, &e)) return;
        uint32_t name = intern(t, e.name), file = intern(t, e.file);
        if (!t->oom && d9m_symtab_add(&t->symbols, e.addr, e.size, name, file, e.line, e.depth) != 0)
            t->oom = true;
    } else if (ev->schema->bind.role == D9_SCH_MEMORY_MAP) {
        d9m_mapping_event e;
        if (!d9m_mapping_read(ev, &e)) return;
        uint32_t path = intern(t, e.path), build_id = intern(t, e.build_id);
        if (!t->oom && d9m_symtab_add_mapping(&t->symbols, e.start, e.end, e.file_offset, path, build_id) != 0)
            t->oom = true;
    }
}

/* The function holding addr (the outermost inline level), else object+offset, else the
 * address. */
static void describe(d9_truncated_ends *t, uint64_t addr, char *out, size_t size) {
    const d9m_sym *found[16];
    uint32_t n = d9m_symtab_lookup(&t->symbols, addr, found, 16);
    if (n > 0) {
        snprintf(out, size, "%s", d9a_strings_get(&t->strings, found[n - 1]->name));
        return;
    }
    uint32_t m = d9m_symtab_mapping_of(&t->symbols, addr);
    if (m != D9M_NONE) {
        uint32_t count;
        const d9m_mapping *maps = d9m_symtab_mappings(&t->symbols, &count);
        const char *path = d9a_strings_get(&t->strings, maps[m].path);
        const char *base = path ? strrchr(path, '/') : NULL;
        snprintf(out, size, "%s+0x%" PRIx64, base ? base + 1 : path ? path : "?",
                 addr - maps[m].start + maps[m].file_offset);
        return;
    }
    snprintf(out, size, "0x%" PRIx64, addr);
}

static int by_where(const void *a, const void *b) {
    return strcmp(((const d9_truncated_end *)a)->where, ((const d9_truncated_end *)b)->where);
}

static int by_stacks_desc(const void *a, const void *b) {
    const d9_truncated_end *x = a, *y = b;
    if (x->stacks != y->stacks) return x->stacks > y->stacks ? -1 : 1;
    return strcmp(x->where, y->where);
}

int d9_truncated_ends_top(d9_truncated_ends *t, d9_truncated_end *out, size_t max, size_t *n,
                          uint64_t *rest) {
    *n = 0;
    *rest = 0;
    size_t cap = t->count_by_end.count, used = 0;
    d9_truncated_end *all = cap ? calloc(cap, sizeof *all) : NULL;
    if (cap && !all) return -1;
    size_t pos = 0;
    uint64_t addr, stacks;
    while (used < cap && d9_u64_map_next(&t->count_by_end, &pos, &addr, &stacks)) {
        describe(t, addr, all[used].where, sizeof all->where);
        all[used++].stacks = stacks;
    }
    /* the addresses of one function count together */
    qsort(all, used, sizeof *all, by_where);
    size_t merged = 0;
    for (size_t i = 0; i < used; i++) {
        if (merged && strcmp(all[merged - 1].where, all[i].where) == 0) all[merged - 1].stacks += all[i].stacks;
        else all[merged++] = all[i];
    }
    qsort(all, merged, sizeof *all, by_stacks_desc);
    for (size_t i = 0; i < merged; i++) {
        if (i < max) out[(*n)++] = all[i];
        else *rest += all[i].stacks;
    }
    free(all);
    return 0;
}

void d9_truncated_ends_free(d9_truncated_ends *t) {
    d9_u64_map_free(&t->count_by_end);
    d9m_symtab_free(&t->symbols);
    d9a_strings_free(&t->strings);
    memset(t, 0, sizeof *t);
}
