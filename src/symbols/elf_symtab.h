/* The code symbols of an ELF module (.symtab and .dynsym, possibly from a separate debug file),
 * sorted by address for nearest-symbol lookups. An address resolves to a symbol only when the
 * symbol really covers it (its size, or for unsized symbols the end of their section), so an
 * address in a stripped gap is reported as unknown instead of borrowing a far-away name. */
#ifndef D9_SYMBOLS_ELF_SYMTAB_H
#define D9_SYMBOLS_ELF_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/elf_image.h"

typedef struct d9_elf_sym {
    uint64_t addr;
    uint64_t size;      /* 0 when the symbol table gives none */
    uint64_t limit;     /* end of the symbol's section: bounds unsized symbols */
    const char *name;   /* points into the image the symbol came from */
    uint32_t rank;      /* lower is preferred among symbols at the same address */
} d9_elf_sym;

typedef struct d9_elf_symtab {
    d9_elf_sym *syms;
    size_t count, cap;
} d9_elf_symtab;

/* Add the code symbols of section `section_name` (".symtab" or ".dynsym") of `img`. The image
 * must outlive the table (names point into it). Returns the number added, -1 on no memory. */
long d9_elf_symtab_add(d9_elf_symtab *t, const d9_elf_image *img, const char *section_name);
/* Sort; call once after the adds, before lookups. */
void d9_elf_symtab_finish(d9_elf_symtab *t);
/* The symbol covering `vaddr`, or NULL. */
const d9_elf_sym *d9_elf_symtab_lookup(const d9_elf_symtab *t, uint64_t vaddr);
void d9_elf_symtab_free(d9_elf_symtab *t);

#endif
