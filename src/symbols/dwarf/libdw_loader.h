/* libdw (elfutils) loaded with dlopen the first time the symbolizer needs DWARF, instead of
 * linked: the `dial9` binary then does not load libdw and its dependencies (libelf, liblzma,
 * libbz2...) for every command, which `dial9 run` would add to the start of the program it
 * records. The function types come from elfutils' headers at build time (libdw-dev). */
#ifndef D9_SYMBOLS_DWARF_LIBDW_LOADER_H
#define D9_SYMBOLS_DWARF_LIBDW_LOADER_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

/* The soname loaded: the ABI the headers describe. */
#define D9_LIBDW_SONAME "libdw.so.1"

/* Every libdw function the DWARF backend calls or hands to libdwfl as a callback. */
#define D9_LIBDW_FUNCTIONS(X)                                                                       \
    X(dwfl_begin) X(dwfl_end) X(dwfl_report_begin) X(dwfl_report_elf) X(dwfl_report_end)           \
    X(dwfl_module_getsrc) X(dwfl_lineinfo) X(dwfl_module_addrdie) X(dwfl_module_addrname)          \
    X(dwfl_build_id_find_elf) X(dwfl_standard_find_debuginfo) X(dwfl_offline_section_address)     \
    X(dwarf_tag) X(dwarf_attr) X(dwarf_attr_integrate) X(dwarf_formstring) X(dwarf_formudata)     \
    X(dwarf_getsrcfiles) X(dwarf_filesrc) X(dwarf_getscopes) X(dwarf_getscopes_die)

typedef struct d9_libdw {
#define D9_LIBDW_POINTER(fn) __typeof__(fn) *fn;
    D9_LIBDW_FUNCTIONS(D9_LIBDW_POINTER)
#undef D9_LIBDW_POINTER
} d9_libdw;

/* The functions, loaded once per process (thread-safe) and never unloaded. NULL when the
 * library or one of its functions is missing; then *why (when why is not NULL) says which,
 * in a static string. */
const d9_libdw *d9_libdw_load(const char **why);

#endif
