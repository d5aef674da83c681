/* What symbolizing one trace file needs from it: the addresses its callchains use, the memory
 * maps it recorded (MemoryMapEvent), the addresses it already names (SymbolTableEntry) and
 * the boot id of the recording. Filled by the in-process scanner (trace_scan.h) or by the CLI
 * through the decoder, then handed to the symbolizer. */
#ifndef D9_SYMBOLS_SYM_INPUT_H
#define D9_SYMBOLS_SYM_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/u64_map.h"

typedef struct d9_sym_map {
    uint64_t start, end, file_offset;
    char *path;
    char *build_id; /* hex, "" when unknown */
} d9_sym_map;

/* Flags per address. */
enum {
    D9_ADDR_RETURN = 1, /* seen below the leaf of a callchain: a return address, so its
                           symbol and line are those of addr - 1 (the call instruction) */
    D9_ADDR_EXACT = 2,  /* seen as the leaf of a CPU sample: the interrupted instruction */
    D9_ADDR_NAMED = 4,  /* the file already has a SymbolTableEntry with a real name for it */
    D9_ADDR_FALLBACK = 8, /* the file has one with a fallback name ("module+0x...") only */
};

typedef struct d9_sym_input {
    d9_sym_map *maps; /* in file order, identical repeats removed */
    size_t map_count, map_cap;
    d9_u64_map addrs; /* address -> D9_ADDR_* flags */
    char boot_id[64]; /* from SegmentMetadataEvent, "" when absent */
    bool oom;         /* an allocation failed: the input is incomplete */
} d9_sym_input;

void d9_sym_input_init(d9_sym_input *in);
void d9_sym_input_free(d9_sym_input *in);
/* One on the heap (a list handed from the segment writer to the pipeline): NULL on no memory;
 * destroy frees it whole (NULL is fine). */
d9_sym_input *d9_sym_input_new(void);
void d9_sym_input_destroy(d9_sym_input *in);

void d9_sym_input_add_map(d9_sym_input *in, uint64_t start, uint64_t end, uint64_t file_offset,
                          const char *path, size_t path_len, const char *build_id,
                          size_t build_id_len);
/* A callchain, leaf first. `leaf_exact`: the leaf is an interrupted instruction (a CPU
 * sample), not a return address. */
void d9_sym_input_add_stack(d9_sym_input *in, const uint64_t *addrs, size_t n, bool leaf_exact);
/* Same, reading n little-endian u64 from unaligned bytes. */
void d9_sym_input_add_stack_bytes(d9_sym_input *in, const uint8_t *bytes, size_t n, bool leaf_exact);
/* One address with its D9_ADDR_* flags (or'ed with those it has). */
void d9_sym_input_add_address(d9_sym_input *in, uint64_t addr, uint64_t flags);
/* A SymbolTableEntry of the file: `name` counts as a real name unless it is empty or one of
 * our fallbacks ("module+0x1f00"), which a later pass with better files may replace. */
void d9_sym_input_note_symbol(d9_sym_input *in, uint64_t addr, const char *name, size_t len);

/* True when `given` says everything `scanned` (the same file's scan) says: every address with
 * at least its flags, its maps in the same order (others may come between) and its boot id.
 * The recorder's own list of a segment is checked so against a scan in tests. */
bool d9_sym_input_covers(const d9_sym_input *given, const d9_sym_input *scanned);

/* True for names we write when an address has no symbol: "module+0xHEX". */
bool d9_sym_is_fallback_name(const char *name, size_t len);

#endif
