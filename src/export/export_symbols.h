/* Symbolization for the exports: the trace's SymbolTableEntry events (address -> function,
 * file, line, one entry per inline level) and MemoryMapEvent mappings, applied to the call
 * stacks of the samples. Builds the model's frames, locations and stacks. */
#ifndef D9_EXPORT_SYMBOLS_H
#define D9_EXPORT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "core/stack_table.h"
#include "export/export_model.h"

typedef struct d9_xsymbol {
    uint64_t addr, size; /* size 0: the entry names exactly this address */
    uint32_t name, file, line;
    uint16_t depth;
} d9_xsymbol;

typedef struct d9_xsymbols {
    d9_xsymbol *items;
    size_t count, cap;
    d9_xmapping *maps;
    size_t map_count, map_cap;
} d9_xsymbols;

void d9_xsymbols_init(d9_xsymbols *s);
void d9_xsymbols_free(d9_xsymbols *s);
int d9_xsymbols_add(d9_xsymbols *s, const d9_xsymbol *sym);          /* 0 or -1 (memory) */
int d9_xsymbols_add_mapping(d9_xsymbols *s, const d9_xmapping *map); /* 0 or -1 (memory) */

/* Fill m->frames, locs, stacks, stack_locs and mappings for the stacks marked `used`
 * (stacks[i] is the stack with index i; unused ones get an empty d9_xstack). An address with
 * symbol entries gets one frame per inline level, innermost first; one without gets a frame
 * named "0x..." (with its mapping's file name when a mapping holds it). 0 or -1 (memory). */
int d9_xsymbols_resolve(d9_xsymbols *s, d9_xmodel *m, const d9_stack_entry *const *stacks,
                        size_t stack_count, const bool *used);

#endif
