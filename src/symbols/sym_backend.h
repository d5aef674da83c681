/* What a symbolizer can be given beyond ELF symbol tables: a provider of file:line and inlined
 * frames (the libdw one in src/symbols/dwarf/, for the CLI) that may also know where to find
 * an ELF file by build id (debuginfod). libdial9 never links one: it only sees this table. */
#ifndef D9_SYMBOLS_SYM_BACKEND_H
#define D9_SYMBOLS_SYM_BACKEND_H

#include <stdint.h>

typedef struct d9_sym_frame {
    const char *name; /* function name, never NULL */
    const char *file; /* source file, "" when unknown */
    uint32_t line;    /* 0 when unknown */
} d9_sym_frame;

typedef struct d9_sym_backend {
    void *ctx;
    /* An ELF file with build id `build_id` found by the backend's own means (debuginfod...):
     * a malloc'd path, or NULL. May be NULL. */
    char *(*find_elf)(void *ctx, const char *build_id, const char *recorded_path);
    /* The frames at `vaddr` (an address of the ELF file `elf_path`, already adjusted to the
     * call instruction for return addresses), outermost first: the function, then the inlined
     * calls down to the innermost. Returns how many were written (0: nothing known). Strings
     * stay valid until close. */
    uint32_t (*lookup)(void *ctx, const char *elf_path, const char *build_id, uint64_t vaddr,
                       d9_sym_frame *frames, uint32_t max);
    void (*close)(void *ctx);
} d9_sym_backend;

#endif
