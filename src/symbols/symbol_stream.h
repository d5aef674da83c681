/* Encode resolved addresses as one complete dial9 stream of SymbolTableEntry events, ready to
 * be appended to the trace file they describe: format header, the SymbolTableEntry schema,
 * string pool frames (batched, each string once) and one event per (address, inline depth),
 * timestamp 0, as dial9 writes them: addr = the address as it appears in callchains, size 0,
 * inline_depth 0 for the function itself and 1.. for the calls inlined into it, source_file ""
 * and source_line 0 when unknown. */
#ifndef D9_SYMBOLS_SYMBOL_STREAM_H
#define D9_SYMBOLS_SYMBOL_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "format/encoder.h"
#include "symbols/symbolizer.h"

typedef struct d9_symbol_stream d9_symbol_stream;

d9_symbol_stream *d9_symbol_stream_new(void);
/* Bound the finished stream to `max_bytes` (default: no bound): an address whose frames would
 * take it past the bound is not added. For a file that must stay within a size limit. */
void d9_symbol_stream_set_limit(d9_symbol_stream *w, uint64_t max_bytes);
/* Add the frames of one address. False when they did not fit within the limit (nothing was
 * added; a smaller address may still fit). */
bool d9_symbol_stream_add(d9_symbol_stream *w, uint64_t addr, const d9_sym_result *r);
/* Finish and return the bytes (owned by the stream; NULL when out of memory). Entries added
 * so far: *entries. An empty stream (no entries) has length 0. */
const uint8_t *d9_symbol_stream_bytes(d9_symbol_stream *w, size_t *len, uint64_t *entries);
void d9_symbol_stream_free(d9_symbol_stream *w);

#endif
