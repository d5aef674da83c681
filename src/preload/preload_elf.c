/* Which of some functions does an ELF file define in its full symbol table? Used once at start,
 * on the program's own file, for the loop libraries' probes (one pass for all of them), to tell
 * "the loop is linked in" from "the loop is absent" when the program does not export it (what
 * it exports, dlsym finds). The headers are read; the file is mapped only when it has a
 * .symtab, and then only the symbol table and its strings are touched. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload.h"

#define MAX_SYMTAB_BYTES (64u << 20) /* past this the scan costs more than it is worth at start */

static bool in_file(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

/* The bits of `names` that the table defines. */
static unsigned table_defines(const uint8_t *base, uint64_t size, const Elf64_Shdr *sh,
                              const Elf64_Shdr *strtab, const char *const *names, unsigned n) {
    unsigned found = 0;
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

static bool pread_all(int fd, void *buf, size_t len, uint64_t off) {
    return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

unsigned d9p_elf_defines(const char *path, const char *const *names, unsigned n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    unsigned found = 0;
    /* The headers are read, not mapped: most programs are stripped, and then nothing else is. */
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof eh || !pread_all(fd, &eh, sizeof eh, 0) ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
        !in_file(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), (uint64_t)st.st_size) ||
        !(sh = malloc((size_t)eh.e_shnum * sizeof *sh)) ||
        !pread_all(fd, sh, (size_t)eh.e_shnum * sizeof *sh, eh.e_shoff)) {
        free(sh);
        close(fd);
        return 0;
    }
    unsigned symtab = eh.e_shnum;
    for (unsigned i = 0; i < eh.e_shnum && symtab == eh.e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < eh.e_shnum) symtab = i;
    uint64_t size = (uint64_t)st.st_size;
    void *map = symtab < eh.e_shnum ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (map != MAP_FAILED) {
        found = table_defines(map, size, &sh[symtab], &sh[sh[symtab].sh_link], names, n < 32 ? n : 32);
        munmap(map, size);
    }
    free(sh);
    return found;
}
