/* Pipeline step: append SymbolTableEntry events to a sealed trace.N.bin in place (within the
 * room the writer kept for them), counted in the process-wide symbolize report. */
#ifndef D9_SINKS_STEP_SYMBOLIZE_H
#define D9_SINKS_STEP_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "symbols/sym_input.h"

typedef struct d9_step_symbolize d9_step_symbolize;

/* Never past max_file_size, never more than max_growth bytes added. NULL on no memory. */
d9_step_symbolize *d9_step_symbolize_new(uint64_t max_file_size, uint64_t max_growth);
/* Symbolize `path` (relative to dir_fd: the run directory's handle, or AT_FDCWD); the outcome goes to the symbolize report (symbolize_report.h).
 * `symbols` (may be NULL: the file is read): what it holds to name, as its writer listed it. */
void d9_step_symbolize_run(d9_step_symbolize *s, int dir_fd, const char *path, const d9_sym_input *symbols,
                           bool (*give_up)(void *), void *ctx);
void d9_step_symbolize_free(d9_step_symbolize *s);

#endif
