/* Does an ELF file define a function? Used once per loop library at start, on the program's
 * own file, to tell "the loop is linked in" from "the loop is absent" when the program does
 * not export it. The file is mapped, not read: only the section headers and the symbol
 * tables are touched. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload.h"

#define MAX_SYMTAB_BYTES (64u << 20) /* past this the scan costs more than it is worth at start */

static bool in_file(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

static bool table_defines(const uint8_t *base, uint64_t size, const Elf64_Shdr *sh,
                          const Elf64_Shdr *strtab, const char *name) {
    if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_size > MAX_SYMTAB_BYTES) return false;
    if (!in_file(sh->sh_offset, sh->sh_size, size) ||
        !in_file(strtab->sh_offset, strtab->sh_size, size))
        return false;
    const Elf64_Sym *syms = (const Elf64_Sym *)(base + sh->sh_offset);
    const char *strs = (const char *)(base + strtab->sh_offset);
    size_t n = sh->sh_size / sizeof(Elf64_Sym), want = strlen(name) + 1;
    for (size_t i = 0; i < n; i++) {
        const Elf64_Sym *s = &syms[i];
        if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC) continue;
        if (s->st_name >= strtab->sh_size || strtab->sh_size - s->st_name < want) continue;
        if (memcmp(strs + s->st_name, name, want) == 0) return true;
    }
    return false;
}

bool d9p_elf_defines(const char *path, const char *name) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    bool found = false;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return false;
    }
    uint64_t size = (uint64_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return false;
    const uint8_t *base = map;
    const Elf64_Ehdr *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
        eh->e_shentsize == sizeof(Elf64_Shdr) &&
        in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), size)) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
        for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
            if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) continue;
            if (sh[i].sh_link >= eh->e_shnum) continue;
            found = table_defines(base, size, &sh[i], &sh[sh[i].sh_link], name);
        }
    }
    munmap(map, size);
    return found;
}
