/* Where a stripped ELF's separate debug file is. Distributions strip libraries and ship the
 * .symtab, DWARF and .debug_frame in packages of their own (Debian's -dbgsym, libc6-dbg), laid
 * out under a debug root (/usr/lib/debug) two ways, searched in this order:
 *  1. by build id: ROOT/.build-id/xx/rest.debug (its build id must be the file's);
 *  2. by the file's .gnu_debuglink name: next to the file, in its .debug/ directory, then
 *     ROOT/<directory of the file>/name; when both have a build id it must agree (the same
 *     build, even if its debug sections were recompressed since), else the CRC-32 the link
 *     records must be the candidate's.
 * A candidate of another build is never used; it is described in a note instead, so a user
 * who installed the wrong -dbgsym version learns why names are missing. Plain libc. */
#ifndef D9_SYMBOLS_DEBUG_FILE_H
#define D9_SYMBOLS_DEBUG_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/elf_image.h"

#define D9_DEBUG_ROOTS_MAX 16

/* The system's debug roots: DIAL9_DEBUG_FILE_DIRS (directories separated by ':', read once;
 * empty entries ignored) or else /usr/lib/debug. Static storage. */
const char *const *d9_debug_roots(size_t *count);

typedef struct d9_debug_found {
    char path[4096];   /* the debug file opened */
    const char *how;   /* "build-id" or "debuglink" */
} d9_debug_found;

/* Find and open (into `out`) the debug file of the ELF at `path` whose build id is
 * `build_id` ("" when it has none). `file` is that ELF, open, for its .gnu_debuglink (NULL:
 * search by build id only). `want_section` (e.g. ".symtab", ".debug_frame"): a matching
 * candidate without it is passed over. False when none was found; then `note` (may be NULL)
 * says which candidates belonged to another build, "" when there were none. */
bool d9_debug_file_find(const char *path, const char *build_id, const d9_elf_image *file,
                        const char *const *roots, size_t nroots, const char *want_section, d9_elf_image *out,
                        d9_debug_found *found, char *note, size_t notelen);

/* The CRC-32 (ISO-HDLC, as zlib's crc32 and .gnu_debuglink use it) of `len` bytes, continuing `crc`. */
uint32_t d9_crc32(uint32_t crc, const uint8_t *p, size_t len);

#endif
