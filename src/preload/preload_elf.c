/* Which of some functions does an ELF file define? Used once at start, on the program's own
 * file, for the loop libraries' probes (one mapping for all of them), to tell "the loop is linked in" from "the loop is absent" when the program does
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

/* The bits of `names` that the table defines, added to `found`. */
static unsigned table_defines(const uint8_t *base, uint64_t size, const Elf64_Shdr *sh,
                              const Elf64_Shdr *strtab, const char *const *names, unsigned n,
                              unsigned found) {
    if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_size > MAX_SYMTAB_BYTES) return found;
    if (!in_file(sh->sh_offset, sh->sh_size, size) ||
        !in_file(strtab->sh_offset, strtab->sh_size, size))
        return found;
    const Elf64_Sym *syms = (const Elf64_Sym *)(base + sh->sh_offset);
    const char *strs = (const char *)(base + strtab->sh_offset);
    size_t count = sh->sh_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < count; i++) {
        const Elf64_Sym *s = &syms[i];
        if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC) continue;
        if (s->st_name >= strtab->sh_size) continue;
        const char *sym = strs + s->st_name;
        size_t room = strtab->sh_size - s->st_name;
        for (unsigned k = 0; k < n; k++) {
            size_t want = strlen(names[k]) + 1;
            if (!(found & 1u << k) && room >= want && memcmp(sym, names[k], want) == 0) found |= 1u << k;
        }
    }
    return found;
}

unsigned d9p_elf_defines(const char *path, const char *const *names, unsigned n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    unsigned found = 0;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return 0;
    }
    uint64_t size = (uint64_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return 0;
    const uint8_t *base = map;
    const Elf64_Ehdr *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
        eh->e_shentsize == sizeof(Elf64_Shdr) &&
        in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), size)) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) continue;
            if (sh[i].sh_link >= eh->e_shnum) continue;
            found = table_defines(base, size, &sh[i], &sh[sh[i].sh_link], names, n < 32 ? n : 32, found);
        }
    }
    munmap(map, size);
    return found;
}
