/* Where truncated stacks end, for `dial9 stats`: the outermost frame each one kept, named by
 * the trace's own symbols (SymbolTableEntry), else by object and offset (MemoryMapEvent).
 * A stack is truncated when unwinding reached past the bytes of stack the recorder copied:
 * the frames it kept are exact, only the callers above are missing. Saying where that happens
 * tells a known cause (libuv's uv__io_poll keeps a 12.5 KiB frame: docs/kernel-sources.md,
 * "libuv's poller frame") from stacks that lost the application's own frames. */
#ifndef D9_CLI_TRUNCATED_ENDS_H
#define D9_CLI_TRUNCATED_ENDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/intern.h"
#include "analysis/symtab.h"
#include "common/u64_map.h"
#include "format/decoder.h"

typedef struct d9_truncated_ends {
    d9_u64_map count_by_end; /* outermost address kept -> truncated stacks ending there */
    uint64_t stacks;
    d9a_strings strings;     /* symbol names, files and mapping paths */
    d9a_symtab symbols;      /* the analysis's table: the same names `dial9 analyze` prints */
    bool oom;
} d9_truncated_ends;

/* Empty, in place (the table points at the strings). */
void d9_truncated_ends_init(d9_truncated_ends *t);
/* A truncated stack (leaf first). */
void d9_truncated_ends_note(d9_truncated_ends *t, const uint64_t *addrs, uint32_t count);
/* A SymbolTableEntry or MemoryMapEvent (others are ignored). */
void d9_truncated_ends_note_symbols(d9_truncated_ends *t, const d9_event *ev);

typedef struct d9_truncated_end {
    char where[192]; /* "uv__io_poll", "libuv.so.1.0.0+0x22a60" or "0x7f..." */
    uint64_t stacks;
} d9_truncated_end;

/* The places truncated stacks end, most stacks first (same place: by name), at most max of
 * them; *rest: the stacks that end elsewhere. -1 when out of memory. */
int d9_truncated_ends_top(d9_truncated_ends *t, d9_truncated_end *out, size_t max, size_t *n,
                          uint64_t *rest);
void d9_truncated_ends_free(d9_truncated_ends *t);

#endif
