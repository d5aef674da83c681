#include "sources/elf_funcs.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct mapped {
    const uint8_t *data;
    size_t size;
} mapped;

static bool map_file(const char *path, mapped *m) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(Elf64_Ehdr);
    void *p = ok ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) return false;
    m->data = p;
    m->size = (size_t)st.st_size;
    return true;
}

static bool in_file(const mapped *m, uint64_t off, uint64_t len) {
    return off <= m->size && len <= m->size - off;
}

/* The symbol table to read (.symtab, or .dynsym in a stripped file) and its string table. */
static const Elf64_Shdr *pick_symtab(const mapped *m, const Elf64_Shdr *sh, unsigned count) {
    const Elf64_Shdr *dyn = NULL;
    for (unsigned i = 0; i < count; i++) {
        if (sh[i].sh_type == SHT_SYMTAB) return &sh[i];
        if (sh[i].sh_type == SHT_DYNSYM) dyn = &sh[i];
    }
    (void)m;
    return dyn;
}

long d9_elf_funcs_each(const char *path, bool (*fn)(const d9_elf_funcs_entry *f, void *ctx), void *ctx) {
    mapped m;
    if (!map_file(path, &m)) return -1;
    long visited = -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m.data;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(&m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(m.data + eh->e_shoff);
    const Elf64_Shdr *symtab = pick_symtab(&m, sh, eh->e_shnum);
    if (!symtab || symtab->sh_link >= eh->e_shnum || symtab->sh_entsize != sizeof(Elf64_Sym) ||
        !in_file(&m, symtab->sh_offset, symtab->sh_size))
        goto out;
    const Elf64_Shdr *strtab = &sh[symtab->sh_link];
    if (!in_file(&m, strtab->sh_offset, strtab->sh_size)) goto out;
    const Elf64_Sym *syms = (const Elf64_Sym *)(m.data + symtab->sh_offset);
    const char *strs = (const char *)(m.data + strtab->sh_offset);
    size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);
    visited = 0;
    for (size_t i = 0; i < nsyms; i++) {
        const Elf64_Sym *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_size == 0) continue;
        if (s->st_shndx == SHN_UNDEF || s->st_shndx >= eh->e_shnum) continue;
        if (s->st_name >= strtab->sh_size) continue;
        const Elf64_Shdr *sec = &sh[s->st_shndx];
        if (sec->sh_type != SHT_PROGBITS || s->st_value < sec->sh_addr) continue;
        uint64_t off = s->st_value - sec->sh_addr + sec->sh_offset;
        if (!in_file(&m, off, s->st_size)) continue;
        const char *name = strs + s->st_name;
        if (!memchr(name, 0, strtab->sh_size - s->st_name)) continue;
        d9_elf_funcs_entry f = {.name = name, .addr = s->st_value, .size = s->st_size, .code = m.data + off};
        visited++;
        if (!fn(&f, ctx)) break;
    }
out:
    munmap((void *)m.data, m.size);
    return visited;
}

typedef struct find_ctx {
    const char *name;
    uint64_t addr, size;
    bool found;
} find_ctx;

static bool find_one(const d9_elf_funcs_entry *f, void *ctx) {
    find_ctx *fc = ctx;
    if (strcmp(f->name, fc->name) != 0) return true;
    fc->addr = f->addr;
    fc->size = f->size;
    fc->found = true;
    return false;
}

bool d9_elf_funcs_find(const char *path, const char *name, uint64_t *addr, uint64_t *size) {
    find_ctx fc = {.name = name};
    d9_elf_funcs_each(path, find_one, &fc);
    if (fc.found) {
        *addr = fc.addr;
        *size = fc.size;
    }
    return fc.found;
}
