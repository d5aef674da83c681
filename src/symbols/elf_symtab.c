#include "symbols/elf_symtab.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

/* Among aliases at one address (write, __write, __libc_write...) prefer, in order: a global
 * over a weak over a local binding, a function over an untyped label, a sized symbol, fewer
 * leading underscores, a shorter name. The order must not depend on the file the symbols came
 * from, so in-process and offline symbolization pick the same name. */
static uint32_t rank_of(const Elf64_Sym *s, const char *name) {
    uint32_t bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
    uint32_t r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
    r = r * 2 + (type == STT_FUNC || type == STT_GNU_IFUNC ? 0 : 1);
    r = r * 2 + (s->st_size ? 0 : 1);
    uint32_t under = 0;
    while (name[under] == '_' && under < 7) under++;
    r = r * 8 + under;
    size_t len = strlen(name);
    return r * 1024 + (uint32_t)(len < 1023 ? len : 1023);
}

static bool grow(d9_elf_symtab *t, size_t more) {
    if (t->cap - t->count >= more) return true;
    size_t cap = t->cap ? t->cap : 256;
    while (cap - t->count < more) cap *= 2;
    d9_elf_sym *s = realloc(t->syms, cap * sizeof *s);
    if (!s) return false;
    t->syms = s;
    t->cap = cap;
    return true;
}

long d9_elf_symtab_add(d9_elf_symtab *t, const d9_elf_image *img, const char *section_name) {
    d9_elf_section sec, strtab;
    if (!d9_elf_find_section(img, section_name, &sec)) return 0;
    if (sec.entsize != sizeof(Elf64_Sym) || !d9_elf_section_at(img, sec.link, &strtab)) return 0;
    const uint8_t *data = d9_elf_section_data(img, &sec);
    if (!data) return 0;
    size_t n = (size_t)(sec.size / sizeof(Elf64_Sym));
    if (!grow(t, n)) return -1;
    long added = 0;
    for (size_t i = 1; i < n; i++) {
        Elf64_Sym s;
        memcpy(&s, data + i * sizeof s, sizeof s);
        uint32_t type = ELF64_ST_TYPE(s.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
        if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || s.st_value == 0) continue;
        d9_elf_section home;
        if (!d9_elf_section_at(img, s.st_shndx, &home) || !(home.flags & SHF_EXECINSTR)) continue;
        const char *name = d9_elf_string(img, &strtab, s.st_name);
        if (!name || !*name || name[0] == '$') continue; /* '$x'/'$d': ARM mapping symbols */
        t->syms[t->count++] = (d9_elf_sym){
            .addr = s.st_value, .size = s.st_size, .limit = home.addr + home.size,
            .name = name, .rank = rank_of(&s, name)};
        added++;
    }
    return added;
}

static int by_addr_then_rank(const void *a, const void *b) {
    const d9_elf_sym *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return strcmp(x->name, y->name);
}

void d9_elf_symtab_finish(d9_elf_symtab *t) {
    if (t->count) qsort(t->syms, t->count, sizeof *t->syms, by_addr_then_rank);
}

static bool covers(const d9_elf_sym *s, uint64_t v) {
    if (v < s->addr) return false;
    if (s->size) return v - s->addr < s->size;
    return v < s->limit;
}

/* How many earlier symbol groups to look back through for one whose size spans the address
 * (a function that contains a labelled inner symbol). */
#define LOOKBACK 64

const d9_elf_sym *d9_elf_symtab_lookup(const d9_elf_symtab *t, uint64_t vaddr) {
    size_t lo = 0, hi = t->count; /* first index with addr > vaddr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->syms[mid].addr <= vaddr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    size_t i = lo - 1;
    for (int groups = 0; groups < LOOKBACK; groups++) {
        size_t first = i; /* the best-ranked symbol of this address group */
        while (first > 0 && t->syms[first - 1].addr == t->syms[i].addr) first--;
        /* An unsized symbol is only trusted when it is the nearest one below the address. */
        for (size_t j = first; j <= i; j++)
            if (covers(&t->syms[j], vaddr) && (t->syms[j].size || groups == 0)) return &t->syms[j];
        if (first == 0) return NULL;
        i = first - 1;
    }
    return NULL;
}

void d9_elf_symtab_free(d9_elf_symtab *t) {
    free(t->syms);
    memset(t, 0, sizeof *t);
}
