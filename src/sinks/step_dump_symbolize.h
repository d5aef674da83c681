/* A memory-mode dump's symbols (docs/flight-recorder.md): each segment written into the dump
 * gets the names of its callchain addresses appended, as disk mode's pipeline appends them to
 * sealed files, from the list its writer kept while it was written (the file is not read
 * again). On the flight thread, never on the application's. */
#ifndef D9_SINKS_STEP_DUMP_SYMBOLIZE_H
#define D9_SINKS_STEP_DUMP_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbols/sym_input.h"

typedef struct d9_dump_symbolizer d9_dump_symbolizer;

/* What one dump's segments got. */
typedef struct d9_dump_symbols {
    uint32_t segments;  /* symbolized (or with nothing to name) */
    uint32_t unlisted;  /* no list from the writer (a lost write): left for dial9 symbolize */
    uint32_t failed;    /* an error, or out of time: left for dial9 symbolize */
    uint64_t addresses, named;
    char last_error[200];
} d9_dump_symbols;

/* NULL on no memory. Its symbolizer (and its caches) is made at the first segment. */
d9_dump_symbolizer *d9_dump_symbolizer_new(void);
void d9_dump_symbolizer_free(d9_dump_symbolizer *s);

/* Append the names of `listed` (the segment's list; NULL: counted as unlisted) to `name` in
 * the dump directory dir_fd. give_up (may be NULL) is polled between addresses: true leaves
 * the file as it was. */
void d9_dump_symbolize_segment(d9_dump_symbolizer *s, int dir_fd, const char *name, const d9_sym_input *listed,
                               bool (*give_up)(void *), void *ctx, d9_dump_symbols *acc);

/* A segment's list, when the segment is dropped. NULL is fine. */
void d9_dump_segment_symbols_free(d9_sym_input *listed);

#endif
