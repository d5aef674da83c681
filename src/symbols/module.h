/* One mapped file of a traced process, found again by path and build id: where its ELF is
 * (the recorded path if the build id matches, then the debug roots' .build-id, then the debug
 * directories the user gave, then the backend, e.g. debuginfod), its separate debug file when
 * the ELF is stripped (debug_file.h), how to turn a mapped address into an address of that
 * file, and its code symbols. */
#ifndef D9_SYMBOLS_MODULE_H
#define D9_SYMBOLS_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/elf_image.h"
#include "symbols/elf_symtab.h"
#include "symbols/sym_backend.h"

typedef struct d9_module_search {
    const char *const *debug_dirs; /* searched by build id, basename and path */
    size_t debug_dir_count;
    bool system_debug_dir;         /* the system's debug roots (debug_file.h): build id, .gnu_debuglink */
    const char *vdso_build_id;     /* this process's vDSO, usable for "[vdso]" when it matches */
    const void *vdso_image;
    size_t vdso_size;
    d9_sym_backend *backend;       /* may be NULL */
} d9_module_search;

typedef struct d9_module {
    char *path, *build_id;  /* as recorded */
    const char *basename;   /* of path, for "module+0x..." names */
    bool found;             /* some ELF with this build id was found */
    char *elf_path;         /* the file the backend should read (binary, else debug file) */
    d9_elf_image binary;    /* the loadable file, when found (has the real file layout) */
    d9_elf_image debug;     /* a separate debug file, when found and needed for symbols */
    bool have_binary, have_debug;
    d9_elf_symtab syms;
    char *debug_path;       /* the separate debug file, when found */
    char debug_how[16];     /* "build-id" / "debuglink" */
    char where[64];         /* how it was found, for reports: "path", "build-id", ... */
    char note[512];         /* debug files of another build that were passed over ("" none) */
} d9_module;

/* Find and load the module; never fails (found says whether an ELF was found). */
d9_module *d9_module_load(const char *path, const char *build_id, const d9_module_search *search);
void d9_module_free(d9_module *m);

/* The file address of a mapped address, given the mapping it lies in. False when the file's
 * layout does not contain it. */
bool d9_module_vaddr(const d9_module *m, uint64_t map_start, uint64_t map_file_offset, uint64_t addr,
                     uint64_t *vaddr);

#endif
