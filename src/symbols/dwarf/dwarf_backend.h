/* The libdw backend of the symbolizer (built into the reader library when libdw is found,
 * D9_HAVE_LIBDW): source file:line and inlined frames from DWARF, looked up with elfutils'
 * libdwfl in the ELF file itself or in its separate debug file (build-id directories under
 * /usr/lib/debug and the given debug directories, .gnu_debuglink). When DEBUGINFOD_URLS is
 * set, libdwfl also fetches debug files from debuginfod servers, and ELF files missing
 * everywhere else are fetched with elfutils' libdebuginfod (loaded with dlopen when needed). */
#ifndef D9_SYMBOLS_DWARF_DWARF_BACKEND_H
#define D9_SYMBOLS_DWARF_DWARF_BACKEND_H

#include <stddef.h>

#include "symbols/sym_backend.h"

/* NULL on no memory. Free with backend->close(backend->ctx). */
d9_sym_backend *d9_dwarf_backend_new(const char *const *debug_dirs, size_t debug_dir_count);

#endif
