/* What symbolization needs from a trace, read through the decoder (format/decoder.h) in scan
 * mode: callchain addresses, MemoryMapEvents, the SymbolTableEntry names already there and
 * the boot id, into a d9_sym_input. Events of other schemas are stepped over without being
 * decoded (d9_dec_set_scan), which keeps the in-process symbolizer's pass over a sealed
 * segment cheap. Used by the recorder (symbolize_file.c, on the mapped segment: uncompressed,
 * so libdial9 needs no zlib) and by `dial9 symbolize` (cli/cmd_symbolize.c, any file).
 *
 * Stack references whose pool entry comes later are completed when it arrives, at the
 * latest when their stream ends. */
#ifndef D9_SYMBOLS_TRACE_SCAN_H
#define D9_SYMBOLS_TRACE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "format/decoder.h"
#include "symbols/sym_input.h"

/* Read all of d into in (scan mode with skip plans unless `field_by_field`). Returns the
 * number of callchains that referred to stack pool ids their stream never defined. */
uint64_t d9_sym_input_read(d9_decoder *d, d9_sym_input *in, bool field_by_field);

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

/* An uncompressed trace in memory (a mapped segment). */
void d9_trace_scan(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res);
/* The same with every event decoded: what the fast path must agree with, for the
 * differential fuzz target and tests. */
void d9_trace_scan_field_by_field(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res);

#endif
