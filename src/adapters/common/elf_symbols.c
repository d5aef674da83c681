#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file is untrusted input as far as this code knows: every offset is checked. */
static bool in_file(size_t size, uint64_t off, uint64_t len) {
    return off <= size && len <= size - off;
}

static bool scan_symbols(const unsigned char *base, size_t size, const Elf64_Shdr *sym,
                         const Elf64_Shdr *str, uint64_t addr, char *out, size_t len) {
    if (sym->sh_entsize != sizeof(Elf64_Sym) || !in_file(size, sym->sh_offset, sym->sh_size) ||
        !in_file(size, str->sh_offset, str->sh_size))
        return false;
    const Elf64_Sym *syms = (const Elf64_Sym *)(base + sym->sh_offset);
    size_t n = sym->sh_size / sizeof(Elf64_Sym);
    const char *strs = (const char *)(base + str->sh_offset);
    const Elf64_Sym *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const Elf64_Sym *s = &syms[i];
        unsigned type = ELF64_ST_TYPE(s->st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF) continue;
        if (s->st_name >= str->sh_size) continue;
        uint64_t end = s->st_value + (s->st_size ? s->st_size : 1);
        if (addr < s->st_value || addr >= end) continue;
        best = s;
        if (addr == s->st_value) break;
    }
    if (!best) return false;
    const char *name = strs + best->st_name;
    size_t max = str->sh_size - best->st_name;
    if (strnlen(name, max) == max || !*name) return false;
    if (addr == best->st_value) snprintf(out, len, "%s", name);
    else snprintf(out, len, "%s+0x%llx", name, (unsigned long long)(addr - best->st_value));
    return true;
}

bool d9a_elf_function_name(const char *path, uint64_t addr, char *out, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    bool ok = false;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(Elf64_Ehdr)) {
        size_t size = (size_t)st.st_size;
        const unsigned char *base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (base != MAP_FAILED) {
            const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
            if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
                eh->e_shentsize == sizeof(Elf64_Shdr) &&
                in_file(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
                const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
                /* .symtab names static functions too; .dynsym is the fallback */
                for (int want = SHT_SYMTAB; !ok; want = SHT_DYNSYM) {
                    for (unsigned i = 0; i < eh->e_shnum && !ok; i++) {
                        if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum)
                            continue;
                        ok = scan_symbols(base, size, &sh[i], &sh[sh[i].sh_link], addr, out, len);
                    }
                    if (want == SHT_DYNSYM) break;
                }
            }
            munmap((void *)base, size);
        }
    }
    close(fd);
    return ok;
}
