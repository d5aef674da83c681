/* Function symbols of an ELF file, on top of the project's one ELF reader (symbols/elf_image). */
#include "sources/elf_funcs.h"

#include <elf.h>
#include <string.h>

#include "symbols/elf_image.h"

/* The symbol table to read (.symtab, or .dynsym in a stripped file). */
static bool pick_symtab(const d9_elf_image *img, d9_elf_section *out) {
    bool have_dyn = false;
    d9_elf_section s, dyn;
    for (uint32_t i = 0; d9_elf_section_at(img, i, &s); i++) {
        if (s.type == SHT_SYMTAB) {
            *out = s;
            return true;
        }
        if (s.type == SHT_DYNSYM) {
            dyn = s;
            have_dyn = true;
        }
    }
    if (have_dyn) *out = dyn;
    return have_dyn;
}

long d9_elf_funcs_each(const char *path, bool (*fn)(const d9_elf_funcs_entry *f, void *ctx), void *ctx) {
    d9_elf_image img;
    char err[128];
    if (d9_elf_open_path(&img, path, err, sizeof err) != 0) return -1;
    long visited = -1;
    d9_elf_section symtab, strtab;
    const uint8_t *syms;
    if (!pick_symtab(&img, &symtab) || symtab.entsize != sizeof(Elf64_Sym) ||
        !d9_elf_section_at(&img, symtab.link, &strtab) || !(syms = d9_elf_section_data(&img, &symtab)))
        goto out;
    visited = 0;
    for (uint64_t i = 0; i < symtab.size / sizeof(Elf64_Sym); i++) {
        Elf64_Sym s;
        memcpy(&s, syms + i * sizeof s, sizeof s);
        if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_size == 0 || s.st_shndx == SHN_UNDEF) continue;
        d9_elf_section sec;
        if (!d9_elf_section_at(&img, s.st_shndx, &sec) || sec.type != SHT_PROGBITS ||
            s.st_value < sec.addr || s.st_value - sec.addr > sec.size ||
            s.st_size > sec.size - (s.st_value - sec.addr))
            continue;
        const uint8_t *code = d9_elf_section_data(&img, &sec);
        const char *name = d9_elf_string(&img, &strtab, s.st_name);
        if (!code || !name) continue;
        d9_elf_funcs_entry f = {.name = name, .addr = s.st_value, .size = s.st_size,
                                .code = code + (s.st_value - sec.addr)};
        visited++;
        if (!fn(&f, ctx)) break;
    }
out:
    d9_elf_close(&img);
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
