/* Symbolization for the exports: the model's table of the trace's symbols and mappings
 * (model/symtab.h, where the rules are; names are the export's string indexes) applied to the
 * call stacks of the samples. Builds the model's frames, locations and stacks. */
#ifndef D9_EXPORT_SYMBOLS_H
#define D9_EXPORT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "core/stack_table.h"
#include "export/export_model.h"
#include "common/u64_set.h"
#include "model/symtab.h"

/* Fill m->frames, locs, stacks, stack_locs and mappings for the stacks marked `used`
 * (stacks[i] is the stack with index i; unused ones get an empty d9_xstack). An address with
 * symbol entries gets one frame per inline level, innermost first; one without gets a frame
 * named "0x..." (with its mapping's file name when a mapping holds it). A stack whose index
 * is in `truncated` (its callers were not recorded) ends with one more location, outermost: address
 * 0, no mapping, one frame named D9_X_CALLERS_NOT_RECORDED, so that profile viewers group
 * such stacks under it instead of showing their last frame as a root. 0 or -1 (memory). */
#define D9_X_CALLERS_NOT_RECORDED "[callers not recorded]"
int d9_xsymbols_resolve(d9m_symtab *s, d9_xmodel *m, const d9_stack_entry *const *stacks,
                        size_t stack_count, const bool *used, const d9_u64_set *truncated);

#endif
