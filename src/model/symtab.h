/* The trace's own symbols, applied once for every reader (analysis/ and export/): the
 * SymbolTableEntry events (addr = the address exactly as it appears in callchains; one entry
 * per inline level, inline_depth 0 = the function that holds the address, higher = inlined
 * deeper; size 0 = that address exactly, size > 0 = the range [addr, addr+size)) and the
 * MemoryMapEvent executable mappings, read through the schema bindings.
 *
 * Names, files and paths are the reader's string ids: each reader interns them in its own
 * string table, so the table keeps no strings of its own. Every segment repeats the symbols
 * and mappings: the first (addr, inline_depth) and the first (start, end, path) win. */
#ifndef D9_MODEL_SYMTAB_H
#define D9_MODEL_SYMTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "common/u64_map.h"
#include "format/decoder.h"

#define D9M_NONE UINT32_MAX

/* What a SymbolTableEntry says; false when it has no address or no (non-empty) name. */
typedef struct d9m_symbol_event {
    uint64_t addr, size, line, depth;
    d9_dec_str name, file; /* file is empty when unknown */
    uint32_t unresolved;   /* its pooled strings that were undefined when read */
} d9m_symbol_event;
bool d9m_symbol_read(const d9_event *ev, d9m_symbol_event *out);

/* What a MemoryMapEvent says; false when it has no path or an empty range. */
typedef struct d9m_mapping_event {
    uint64_t start, end, file_offset;
    d9_dec_str path, build_id; /* build_id is empty when unknown */
    uint32_t unresolved;       /* its pooled strings that were undefined when read */
} d9m_mapping_event;
bool d9m_mapping_read(const d9_event *ev, d9m_mapping_event *out);

typedef struct d9m_sym {
    uint64_t addr, size;
    uint32_t name, file; /* the reader's string ids */
    uint32_t line, depth;
    uint32_t next;       /* next entry of the same addr, D9M_NONE at the end */
} d9m_sym;

typedef struct d9m_mapping {
    uint64_t start, end, file_offset;
    uint32_t path, build_id; /* the reader's string ids */
    uint32_t order;          /* order of arrival, the tie-break of the sort */
} d9m_mapping;

/* Zero-initialized is an empty table. */
typedef struct d9m_symtab {
    d9m_sym *syms;
    uint32_t count, cap;
    d9_u64_map by_addr;   /* addr -> first entry */
    uint32_t *ranges;     /* depth-0 entries with size > 0, sorted by addr (built on demand) */
    uint32_t nranges;
    bool ranges_built;
    d9m_mapping *maps;    /* sorted by (start, end, order) on demand */
    uint32_t nmaps, maps_cap;
    bool maps_sorted;
} d9m_symtab;

/* 0, or -1 when out of memory. A repeated (addr, depth) is ignored. */
int d9m_symtab_add(d9m_symtab *t, uint64_t addr, uint64_t size, uint32_t name, uint32_t file,
                   uint64_t line, uint64_t depth);
/* 0, or -1 when out of memory. An empty range and a repeated (start, end, path) are ignored. */
int d9m_symtab_add_mapping(d9m_symtab *t, uint64_t start, uint64_t end, uint64_t file_offset,
                           uint32_t path, uint32_t build_id);

/* The entries that name `addr`, deepest inline level first (the function holding it last),
 * at most max: its exact entries, else those of the depth-0 range that covers it. 0 when the
 * trace has no symbol for it. */
uint32_t d9m_symtab_lookup(d9m_symtab *t, uint64_t addr, const d9m_sym **out, uint32_t max);

/* The mappings, sorted by start (then end, then arrival); *count of them. */
const d9m_mapping *d9m_symtab_mappings(d9m_symtab *t, uint32_t *count);
/* Index (into d9m_symtab_mappings) of the mapping that holds addr, or D9M_NONE. Mappings may
 * overlap after a remap: the one starting closest below addr that holds it. */
uint32_t d9m_symtab_mapping_of(d9m_symtab *t, uint64_t addr);

void d9m_symtab_free(d9m_symtab *t);

#endif
