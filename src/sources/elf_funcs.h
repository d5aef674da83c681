/* Function symbols of an ELF64 file (.symtab, else .dynsym): name, address, size and where the
 * code sits in the file. Used at start for the frame-pointer check of the main binary, and by
 * tests to know a function's address range. Not for hot paths: it maps the whole file. */
#ifndef D9_SOURCES_ELF_FUNCS_H
#define D9_SOURCES_ELF_FUNCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_elf_funcs_entry {
    const char *name;
    uint64_t addr;        /* st_value: link-time address (add the load bias for PIE) */
    uint64_t size;
    const uint8_t *code;  /* the function's first bytes in the mapped file (size bytes) */
} d9_elf_funcs_entry;

/* Call fn for each defined function symbol with a nonzero size, in symbol-table order, until it
 * returns false. Returns how many were visited, or -1 when the file is not a readable ELF64. */
long d9_elf_funcs_each(const char *path, bool (*fn)(const d9_elf_funcs_entry *f, void *ctx), void *ctx);

/* Link-time address and size of function `name` in `path`. False when absent. */
bool d9_elf_funcs_find(const char *path, const char *name, uint64_t *addr, uint64_t *size);

#endif
