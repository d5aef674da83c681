/* What an ELF file's full symbol table (.symtab) says. Which of some functions it defines: used
 * once at start, on the program's own file, for the loop libraries' probes (one pass for all of
 * them), to tell "the loop is linked in" from "the loop is absent" when the program does not
 * export it (what it exports, dlsym finds). Which function holds an address: once per
 * home-grown loop, to name a poller's caller that exports no symbol (a static function). The headers are read; the file is mapped only when it has a
 * .symtab, and then only the symbol table and its strings are touched. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
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

/* A function symbol table of a mapped file, checked against the file's size. */
typedef struct symtab {
    const Elf64_Sym *syms;
    size_t count;
    const char *strs;
    uint64_t strs_size;
} symtab;

static bool symtab_of(const uint8_t *base, uint64_t size, const Elf64_Shdr *sh,
                      const Elf64_Shdr *strtab, symtab *t) {
    if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_size > MAX_SYMTAB_BYTES) return false;
    if (!in_file(sh->sh_offset, sh->sh_size, size) ||
        !in_file(strtab->sh_offset, strtab->sh_size, size))
        return false;
    t->syms = (const Elf64_Sym *)(base + sh->sh_offset);
    t->count = sh->sh_size / sizeof(Elf64_Sym);
    t->strs = (const char *)(base + strtab->sh_offset);
    t->strs_size = strtab->sh_size;
    return true;
}

/* The name of defined function symbol i, or NULL. */
static const char *function_name(const symtab *t, size_t i) {
    const Elf64_Sym *s = &t->syms[i];
    if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC) return NULL;
    if (s->st_name >= t->strs_size || !memchr(t->strs + s->st_name, 0, t->strs_size - s->st_name))
        return NULL;
    return t->strs + s->st_name;
}

/* What is asked of a file's .symtab: which of `names` it defines, or which function holds
 * `vaddr` (its name into `out`). */
typedef struct query {
    const char *const *names;
    unsigned n, found;
    uint64_t vaddr;
    char *out;
    size_t out_size;
    bool named;
} query;

static void answer(const symtab *t, query *q) {
    for (size_t i = 0; i < t->count; i++) {
        const char *sym = function_name(t, i);
        if (!sym) continue;
        if (q->out) {
            const Elf64_Sym *s = &t->syms[i];
            if (!q->named && q->vaddr >= s->st_value && q->vaddr - s->st_value < s->st_size) {
                snprintf(q->out, q->out_size, "%s", sym);
                q->named = true;
            }
            continue;
        }
        for (unsigned k = 0; k < q->n; k++)
            if (!(q->found & 1u << k) && !strcmp(sym, q->names[k])) q->found |= 1u << k;
    }
}

static bool pread_all(int fd, void *buf, size_t len, uint64_t off) {
    return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

static void ask_symtab(const char *path, query *q) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    /* The headers are read, not mapped: most programs are stripped, and then nothing else is. */
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof eh || !pread_all(fd, &eh, sizeof eh, 0) ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
        !in_file(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), (uint64_t)st.st_size) ||
        !(sh = malloc((size_t)eh.e_shnum * sizeof *sh)) ||
        !pread_all(fd, sh, (size_t)eh.e_shnum * sizeof *sh, eh.e_shoff)) {
        free(sh);
        close(fd);
        return;
    }
    unsigned at = eh.e_shnum;
    for (unsigned i = 0; i < eh.e_shnum && at == eh.e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < eh.e_shnum) at = i;
    uint64_t size = (uint64_t)st.st_size;
    void *map = at < eh.e_shnum ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    symtab t;
    if (map != MAP_FAILED) {
        if (symtab_of(map, size, &sh[at], &sh[sh[at].sh_link], &t)) answer(&t, q);
        munmap(map, size);
    }
    free(sh);
}

unsigned d9p_elf_defines(const char *path, const char *const *names, unsigned n) {
    query q = {.names = names, .n = n < 32 ? n : 32};
    ask_symtab(path, &q);
    return q.found;
}

bool d9p_elf_function_at(const char *path, uint64_t vaddr, char *out, size_t size) {
    query q = {.vaddr = vaddr, .out = out, .out_size = size};
    ask_symtab(path, &q);
    return q.named;
}
