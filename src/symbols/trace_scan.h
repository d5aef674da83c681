/* A minimal reader of uncompressed dial9 trace files for the in-process symbolizer: it walks
 * the frames and keeps only what symbolization needs (callchain addresses, MemoryMapEvents,
 * existing SymbolTableEntry names, the boot id) into a d9_sym_input.
 *
 * Why not the decoder (src/format/decoder.h): libdial9 depends on libc only, and the decoder
 * lives in the reader library with zlib. Sealed segments are never compressed when this runs.
 * tests/unit/test_symbols_scan.c checks it against the decoder on the same bytes.
 *
 * Like the decoder it handles concatenated streams, pool references before definitions and
 * optional fields; it stops at the first malformed byte, and a truncated final frame ends the
 * data. Bounds-checked throughout. */
#ifndef D9_SYMBOLS_TRACE_SCAN_H
#define D9_SYMBOLS_TRACE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/sym_input.h"

typedef enum d9_scan_status {
    D9_SCAN_END,       /* the data ended at a frame boundary */
    D9_SCAN_TRUNCATED, /* the data ended inside a frame (a crash cut the file short) */
    D9_SCAN_ERROR,     /* malformed data or out of memory */
} d9_scan_status;

typedef struct d9_scan_result {
    d9_scan_status status;
    uint64_t good_bytes; /* end of the last complete frame */
    uint64_t events;
    char message[160];   /* why it stopped, "" after a clean end */
} d9_scan_result;

void d9_trace_scan(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res);
/* The same without the skip plans (every event read field by field): what the fast path must
 * agree with, for the differential fuzz target and tests. */
void d9_trace_scan_field_by_field(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res);

#endif
