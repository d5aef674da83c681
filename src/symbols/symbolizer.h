/* Address -> names, for the addresses of one trace file at a time: the file's memory maps say
 * which module an address belongs to; the module's ELF symbols (and a backend's DWARF, when
 * given) say which function and, with DWARF, which file:line and inlined calls. Kernel
 * addresses use /proc/kallsyms when allowed. An address nothing can name gets a fallback name,
 * "module+0xOFFSET" (OFFSET in the file), "[kernel.kallsyms]+0xADDR" or "[unknown]+0xADDR":
 * no address is ever left out.
 *
 * Modules are cached across files by (path, build id). Not thread-safe: one per thread. */
#ifndef D9_SYMBOLS_SYMBOLIZER_H
#define D9_SYMBOLS_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/sym_backend.h"
#include "symbols/sym_input.h"

#define D9_SYM_MAX_FRAMES 32

typedef struct d9_sym_result {
    uint32_t count;       /* >= 1; frames[i] is inline depth i (0 = the function itself) */
    bool named;           /* frames[0].name is a real symbol, not a fallback */
    d9_sym_frame frames[D9_SYM_MAX_FRAMES];
    char fallback[320];   /* storage for a fallback name */
} d9_sym_result;

typedef struct d9_sym_options {
    const char *const *debug_dirs; /* extra directories to search (the CLI's --debug-dir) */
    size_t debug_dir_count;
    bool system_debug_dir;         /* search the system's debug roots (DIAL9_DEBUG_FILE_DIRS or /usr/lib/debug) */
    const char *kallsyms_path;     /* NULL: /proc/kallsyms */
    const char *kallsyms_cache_dir; /* the kernel image's symbols per boot (kallsyms_cache.h), used
                                     * with /proc/kallsyms only; NULL: the default, "": none */
    d9_sym_backend *backend;       /* file:line and inlines; NULL for symbol names only */
} d9_sym_options;

typedef struct d9_symbolizer d9_symbolizer;

d9_symbolizer *d9_symbolizer_new(const d9_sym_options *opt);
void d9_symbolizer_free(d9_symbolizer *s);

/* The maps of the file about to be resolved (borrowed until the next call or free). */
bool d9_symbolizer_set_maps(d9_symbolizer *s, const d9_sym_map *maps, size_t n);
/* Whether kernel addresses may be named from this machine's /proc/kallsyms: only right for a
 * trace recorded during the current boot. */
void d9_symbolizer_use_kallsyms(d9_symbolizer *s, bool use);

/* Resolve `addr` (flags: D9_ADDR_*). Names point into the symbolizer or into `out`: valid
 * until the symbolizer is freed or `out` is reused. */
void d9_symbolizer_resolve(d9_symbolizer *s, uint64_t addr, uint64_t flags, d9_sym_result *out);

/* For reports: modules used by the current maps that could not be found. Calls fn for each
 * distinct (path, build id) once per symbolizer. */
void d9_symbolizer_missing_modules(d9_symbolizer *s, void (*fn)(const char *path, const char *build_id,
                                                                void *ctx),
                                   void *ctx);
/* For reports: modules used by the current maps whose debug files were passed over (another
 * build: build id or CRC not the module's). Calls fn once per module and symbolizer. */
void d9_symbolizer_module_notes(d9_symbolizer *s, void (*fn)(const char *path, const char *note, void *ctx),
                                void *ctx);
/* Why kernel addresses had no names ("" when kallsyms was used or not needed). */
const char *d9_symbolizer_kernel_note(const d9_symbolizer *s);
/* Where kernel names came from so far: the kallsyms cache, /proc/kallsyms (or the given file)
 * read whole; both false before any kernel address. */
void d9_symbolizer_kernel_sources(const d9_symbolizer *s, bool *cache, bool *whole);

#endif
