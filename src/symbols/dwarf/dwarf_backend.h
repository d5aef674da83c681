/* The libdw backend of the symbolizer (built into the reader library when libdw's headers are
 * found, D9_HAVE_LIBDW): source file:line and inlined frames from DWARF, looked up with
 * elfutils' libdwfl in the ELF file itself or in its separate debug file (build-id directories
 * under /usr/lib/debug and the given debug directories, .gnu_debuglink). When DEBUGINFOD_URLS
 * is set, libdwfl also fetches debug files from debuginfod servers, and ELF files missing
 * everywhere else are fetched with elfutils' libdebuginfod. Both libraries are loaded with
 * dlopen when a backend is made (libdw_loader.h), so nothing else pays for them. */
#ifndef D9_SYMBOLS_DWARF_DWARF_BACKEND_H
#define D9_SYMBOLS_DWARF_DWARF_BACKEND_H

#include <stddef.h>

#include "symbols/sym_backend.h"

/* NULL when libdw cannot be loaded or on no memory, with the reason in *why (a static
 * string; why must not be NULL). Free with backend->close(backend->ctx). */
d9_sym_backend *d9_dwarf_backend_new(const char *const *debug_dirs, size_t debug_dir_count,
                                     const char **why);

#endif
