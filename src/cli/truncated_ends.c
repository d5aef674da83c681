#include "cli/truncated_ends.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frame_class.h"
#include "format/schemas.h"

void d9_truncated_ends_init(d9_truncated_ends *t) {
    memset(t, 0, sizeof *t);
    t->symbols.strings = &t->strings;
}

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

void d9_truncated_ends_note_symbols(d9_truncated_ends *t, const d9_event *ev) {
    /* A segment's symbols follow its stacks (appended when it is sealed): none are needed
     * before the first truncated stack. Its memory maps come first, and are few. */
    if (ev->schema->bind.role == D9_SCH_SYMBOL_TABLE_ENTRY && t->stacks > 0) {
        d9m_symbol_event e;
        if (d9m_symbol_read(ev, &e) &&
            d9a_symtab_add(&t->symbols, e.addr, e.size, e.name.ptr, e.name.len, e.file.ptr, e.file.len,
                           e.line, e.depth) != 0)
            t->oom = true;
    } else if (ev->schema->bind.role == D9_SCH_MEMORY_MAP) {
        d9m_mapping_event e;
        if (d9m_mapping_read(ev, &e) &&
            d9a_symtab_add_mapping(&t->symbols, e.start, e.end, e.file_offset, e.path.ptr, e.path.len) != 0)
            t->oom = true;
    }
}

#define MAX_INLINE_LEVELS 64

/* The function holding addr (the outermost inline level), else object+offset, else the
 * address. */
static void describe(d9_truncated_ends *t, uint64_t addr, char *out, size_t size) {
    d9a_frame frames[MAX_INLINE_LEVELS];
    uint32_t n = d9a_symtab_expand(&t->symbols, addr, frames, MAX_INLINE_LEVELS);
    const d9a_frame *f = &frames[n - 1]; /* innermost first: the function holding it is last */
    if (f->symbol) snprintf(out, size, "%s", f->symbol);
    else if (f->object) snprintf(out, size, "%s+0x%" PRIx64, d9a_basename(f->object), f->object_offset);
    else snprintf(out, size, "0x%" PRIx64, addr);
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
    d9a_symtab_free(&t->symbols);
    d9a_strings_free(&t->strings);
    memset(t, 0, sizeof *t);
}
