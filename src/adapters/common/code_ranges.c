#include "code_ranges.h"

#include <link.h>
#include <string.h>

typedef struct search {
    uintptr_t addr;
    d9a_code_ranges *out;
    bool found;
} search;

static int visit(struct dl_phdr_info *info, size_t size, void *ctx) {
    (void)size;
    search *s = ctx;
    bool contains = false;
    for (int i = 0; i < info->dlpi_phnum && !contains; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        contains = ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz;
    }
    if (!contains) return 0;
    s->out->count = 0;
    for (int i = 0; i < info->dlpi_phnum && s->out->count < D9A_MAX_CODE_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        s->out->lo[s->out->count] = info->dlpi_addr + ph->p_vaddr;
        s->out->hi[s->out->count] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        s->out->count++;
    }
    s->found = true;
    return 1;
}

bool d9a_code_ranges_of(const void *addr, d9a_code_ranges *out) {
    memset(out, 0, sizeof *out);
    search s = {(uintptr_t)addr, out, false};
    dl_iterate_phdr(visit, &s);
    return s.found;
}
