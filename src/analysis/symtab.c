#include "analysis/symtab.h"

int d9a_symtab_add(d9a_symtab *t, uint64_t addr, uint64_t size, const char *name, size_t name_len,
                   const char *file, size_t file_len, uint64_t line, uint64_t depth) {
    uint32_t name_id = d9a_strings_intern(t->strings, name, name_len);
    uint32_t file_id = d9a_strings_intern(t->strings, file ? file : "", file ? file_len : 0);
    if (name_id == UINT32_MAX || file_id == UINT32_MAX) return -1;
    return d9m_symtab_add(&t->t, addr, size, name_id, file_id, line, depth);
}

int d9a_symtab_add_mapping(d9a_symtab *t, uint64_t start, uint64_t end, uint64_t file_offset,
                           const char *path, size_t path_len) {
    if (end <= start) return 0;
    uint32_t id = d9a_strings_intern(t->strings, path, path_len);
    if (id == UINT32_MAX) return -1;
    return d9m_symtab_add_mapping(&t->t, start, end, file_offset, id, 0);
}

uint32_t d9a_symtab_expand(d9a_symtab *t, uint64_t addr, d9a_frame *out, uint32_t max) {
    if (max == 0) return 0;
    bool kernel = d9a_is_kernel_addr(addr);
    uint32_t mi = kernel ? D9M_NONE : d9m_symtab_mapping_of(&t->t, addr);
    uint32_t nmaps;
    const d9m_mapping *m = mi == D9M_NONE ? NULL : &d9m_symtab_mappings(&t->t, &nmaps)[mi];
    d9a_frame frame = {.addr = addr, .kernel = kernel,
                       .object = m ? d9a_strings_get(t->strings, m->path) : NULL,
                       .object_offset = m ? addr - m->start + m->file_offset : 0};
    const d9m_sym *syms[512]; /* report.c expands at most 512 frames a stack */
    uint32_t n = d9m_symtab_lookup(&t->t, addr, syms, max < 512 ? max : 512);
    if (n == 0) {
        out[0] = frame;
        return 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i] = frame;
        out[i].symbol = d9a_strings_get(t->strings, syms[i]->name);
        out[i].file = d9a_strings_get(t->strings, syms[i]->file);
        out[i].line = syms[i]->line;
        out[i].inlined = syms[i]->depth > 0;
    }
    return n;
}

void d9a_symtab_free(d9a_symtab *t) { d9m_symtab_free(&t->t); }
