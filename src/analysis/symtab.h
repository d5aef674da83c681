/* Symbols for the addresses in call stacks: the model's table of the trace's SymbolTableEntry
 * and MemoryMapEvent events (model/symtab.h, where the rules are), expanded into the frames
 * the report prints. Report-time only: stacks are kept as addresses while reading. */
#ifndef D9_ANALYSIS_SYMTAB_H
#define D9_ANALYSIS_SYMTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/intern.h"
#include "model/symtab.h"

/* One frame of an expanded stack. symbol is NULL when the address has no symbol. */
typedef struct d9a_frame {
    uint64_t addr;
    const char *symbol;
    const char *file; /* NULL or "" when unknown */
    uint32_t line;
    bool inlined;     /* inlined into the next (outer) frame of the same address */
    bool kernel;      /* a kernel address */
    const char *object;      /* path of the mapping holding addr (MemoryMapEvent), or NULL */
    uint64_t object_offset;  /* addr's offset in that file */
} d9a_frame;

/* The model's symbol table (model/symtab.h) over the analysis's strings. */
typedef struct d9a_symtab {
    d9a_strings *strings; /* shared with the analysis, not owned */
    d9m_symtab t;
} d9a_symtab;

/* 0, or -1 when out of memory. A repeated (addr, inline_depth) is ignored (every segment may
 * carry the same symbols). */
int d9a_symtab_add(d9a_symtab *t, uint64_t addr, uint64_t size, const char *name, size_t name_len,
                   const char *file, size_t file_len, uint64_t line, uint64_t depth);

/* An executable mapping [start, end) of `path` at file_offset. Repeats are ignored. */
int d9a_symtab_add_mapping(d9a_symtab *t, uint64_t start, uint64_t end, uint64_t file_offset,
                           const char *path, size_t path_len);

/* The frames of one address, leaf first (the deepest inline level first), at most max of
 * them; at least one (an unknown address gives one frame with symbol NULL). */
uint32_t d9a_symtab_expand(d9a_symtab *t, uint64_t addr, d9a_frame *out, uint32_t max);

void d9a_symtab_free(d9a_symtab *t);

static inline bool d9a_is_kernel_addr(uint64_t addr) { return addr >= 0xffff800000000000ull; }

#endif
