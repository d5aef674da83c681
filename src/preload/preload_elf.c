/* What an ELF file's full symbol table (.symtab) says. Which of some functions it defines: used
 * once at start, on the program's own file, for the loop libraries' probes (one pass for all of
 * them), to tell "the loop is linked in" from "the loop is absent" when the program does not
 * export it (what it exports, dlsym finds). Which function holds an address: once per
 * home-grown loop, to name a poller's caller that exports no symbol (a static function), and,
 * stripped, which exported function enters that static function (.dynsym and a few bytes of
 * code). The headers are read; the file is mapped only when it has the table asked for, and
 * then only that table, its strings and those bytes are touched. */
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

/* An ELF file mapped whole, with its section headers and the index of the symbol table asked
 * for (SHT_SYMTAB or SHT_DYNSYM). */
typedef struct elf_map {
    const uint8_t *base;
    uint64_t size;
    Elf64_Shdr *sh;
    unsigned shnum, table;
} elf_map;

static void elf_close(elf_map *e) {
    munmap((void *)e->base, e->size);
    free(e->sh);
}

/* Maps path when it has a symbol table of type `table`: the headers are read, not mapped, so
 * a stripped file (no .symtab) costs two preads. */
static bool elf_open(const char *path, unsigned table, elf_map *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof eh || !pread_all(fd, &eh, sizeof eh, 0) ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
        !in_file(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), (uint64_t)st.st_size) ||
        !(sh = malloc((size_t)eh.e_shnum * sizeof *sh)) ||
        !pread_all(fd, sh, (size_t)eh.e_shnum * sizeof *sh, eh.e_shoff)) {
        free(sh);
        close(fd);
        return false;
    }
    unsigned at = eh.e_shnum;
    for (unsigned i = 0; i < eh.e_shnum && at == eh.e_shnum; i++)
        if (sh[i].sh_type == table && sh[i].sh_link < eh.e_shnum) at = i;
    uint64_t size = (uint64_t)st.st_size;
    void *map = at < eh.e_shnum ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED) {
        free(sh);
        return false;
    }
    *e = (elf_map){.base = map, .size = size, .sh = sh, .shnum = eh.e_shnum, .table = at};
    return true;
}

static bool table_of(const elf_map *e, symtab *t) {
    return symtab_of(e->base, e->size, &e->sh[e->table], &e->sh[e->sh[e->table].sh_link], t);
}

static void ask_symtab(const char *path, query *q) {
    elf_map e;
    if (!elf_open(path, SHT_SYMTAB, &e)) return;
    symtab t;
    if (table_of(&e, &t)) answer(&t, q);
    elf_close(&e);
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

/* ---------------------------------------------------------------- a split function's entry */

#define MAX_FUNCTION_BYTES (1u << 20) /* a static function holding a call this far: no entry */
#define ENTRY_BYTES 64u               /* an exported entry's jump to its body is this near */

/* The file's executable bytes at vaddr..vaddr+len, or NULL. */
static const uint8_t *code_at(const elf_map *e, uint64_t vaddr, uint64_t len) {
    for (unsigned i = 0; i < e->shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_PROGBITS || !(s->sh_flags & SHF_EXECINSTR) || vaddr < s->sh_addr ||
            !in_file(vaddr - s->sh_addr, len, s->sh_size))
            continue;
        uint64_t off = s->sh_offset + (vaddr - s->sh_addr);
        return in_file(off, len, e->size) ? e->base + off : NULL;
    }
    return NULL;
}

static int64_t le32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* Whether function s jumps to `to` in its first bytes (jmp rel32 or rel8): an exported f
 * whose body GCC split off (f.part.0) tests its arguments, then jumps there. */
static bool jumps_to(const elf_map *e, const Elf64_Sym *s, uint64_t to) {
    uint64_t len = s->st_size < ENTRY_BYTES ? s->st_size : ENTRY_BYTES;
    const uint8_t *c = code_at(e, s->st_value, len);
    for (uint64_t k = 0; c && k < len; k++) {
        if (c[k] == 0xe9 && k + 5 <= len && s->st_value + k + 5 + le32(c + k + 1) == to) return true;
        if (c[k] == 0xeb && k + 2 <= len && s->st_value + k + 2 + (int8_t)c[k + 1] == to) return true;
    }
    return false;
}

bool d9p_elf_entry_of(const char *path, uint64_t call_ret, uint64_t inside, char *out, size_t size) {
#if defined(__x86_64__)
    elf_map e;
    if (call_ret < 5 || !elf_open(path, SHT_DYNSYM, &e)) return false;
    const uint8_t *call = code_at(&e, call_ret - 5, 5);
    symtab t = {0};
    const Elf64_Sym *found = NULL;
    const char *name = NULL;
    bool clear = call && call[0] == 0xe8 && table_of(&e, &t); /* call rel32 */
    uint64_t body = clear ? call_ret + (uint64_t)le32(call + 1) : 0;
    clear = clear && body <= inside && inside - body < MAX_FUNCTION_BYTES;
    for (size_t i = 0; clear && i < t.count; i++) {
        const char *sym = function_name(&t, i);
        if (!sym) continue;
        const Elf64_Sym *s = &t.syms[i];
        if (s->st_value >= body && s->st_value <= inside) {
            clear = false; /* an exported function begins there: the body is not static */
        } else if (jumps_to(&e, s, body)) {
            clear = !found || found->st_value == s->st_value; /* two entries: neither */
            if (!found) found = s, name = sym;
        }
    }
    if (clear && name) snprintf(out, size, "%s", name);
    elf_close(&e);
    return clear && name;
#else
    (void)path, (void)call_ret, (void)inside, (void)out, (void)size;
    return false;
#endif
}
