/* Symbolize one trace file: resolve the callchain addresses it does not name yet and append
 * the names as a new stream of SymbolTableEntry events. The in-process pipeline uses the
 * whole thing on sealed (uncompressed) segments; `dial9 symbolize` uses the pieces with its
 * own input (the decoder, gzip). */
#ifndef D9_SYMBOLS_SYMBOLIZE_FILE_H
#define D9_SYMBOLS_SYMBOLIZE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/sym_input.h"
#include "symbols/symbol_stream.h"
#include "symbols/symbolizer.h"

typedef struct d9_symbolize_stats {
    uint64_t addresses;  /* callchain addresses that needed a name */
    uint64_t named;      /* of those, resolved to a symbol */
    uint64_t fallback;   /* of those, given a "module+0x..." name */
    uint64_t skipped;    /* already named in the file (or still only by a fallback name) */
    uint64_t entries;    /* SymbolTableEntry events written (one per inline depth) */
    uint64_t bytes;      /* bytes appended */
    uint64_t no_room;    /* resolved but left out: the file would have grown past its limit */
    bool from_writer;    /* the writer's list was used: the file was not read */
    bool given_short;    /* d9_symbolize_check_given: that list missed what the file holds */
} d9_symbolize_stats;

/* Resolve the addresses of `in` that need a name into `out` (sorted by address): those the file
 * does not name yet, and those it names by a fallback only when a real name is found now. With
 * `all`, every address is resolved and written again. Returns false on no memory. */
bool d9_symbolize_input(d9_symbolizer *sym, const d9_sym_input *in, bool all, d9_symbol_stream *out,
                        d9_symbolize_stats *st);

/* Append `len` bytes with one write at the end of `fd` (opened O_APPEND), whose size was
 * `old_size`: on a failed or short write the file is cut back to `old_size`, so it never
 * ends in a half stream we could have avoided. 0 or -errno. */
int d9_append_stream(int fd, const void *data, size_t len, uint64_t old_size);

/* The in-process step: lock `path` (relative to dir_fd: the run directory's handle, or
 * AT_FDCWD; opened without following a link) (flock; a busy file is left alone), scan it, resolve,
 * append. `given` (may be NULL): what the file holds to symbolize, as its writer listed it
 * while writing, so the file is not read again; it may list more than the file holds (a lost
 * write's addresses), never less. The file grows by at most `max_growth` bytes and never past
 * `max_size` (0: no limit): names that would not fit are left out (st->no_room). `stop` (may
 * be NULL) is polled between addresses: when it returns true the file is left unchanged. 0
 * when done or nothing to do; -1 with a message in err. */
int d9_symbolize_file_in_place(d9_symbolizer *sym, int dir_fd, const char *path, const d9_sym_input *given,
                               uint64_t max_size, uint64_t max_growth, d9_symbolize_stats *st,
                               bool (*stop)(void *ctx), void *stop_ctx, char *err, size_t errlen);

/* Tests: with `given`, scan the file too and set st->given_short when `given` misses something
 * the scan found (d9_sym_input_covers). Off by default. */
extern bool d9_symbolize_check_given;

#endif
