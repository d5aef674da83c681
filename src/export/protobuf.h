/* A protocol buffers wire-format writer on top of d9_buf, for the exporters that write
 * Perfetto traces and pprof profiles. Only the encoding is here (tags, varints, fixed64,
 * length-delimited fields, nested messages); what each field means lives with its exporter.
 * An allocation failure sets d9_buf.failed, which callers check once at the end. */
#ifndef D9_EXPORT_PROTOBUF_H
#define D9_EXPORT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include "format/encoder.h"

enum { D9_PB_VARINT = 0, D9_PB_FIXED64 = 1, D9_PB_LEN = 2 };

static inline void d9_pb_tag(d9_buf *b, uint32_t field, unsigned wire_type) {
    d9_put_varint(b, ((uint64_t)field << 3) | wire_type);
}

/* uint32/uint64/int32/int64 (non-negative), bool and enum fields */
static inline void d9_pb_uint(d9_buf *b, uint32_t field, uint64_t v) {
    d9_pb_tag(b, field, D9_PB_VARINT);
    d9_put_varint(b, v);
}
/* int64 fields may be negative: two's complement in 10 varint bytes, as protobuf does */
static inline void d9_pb_int(d9_buf *b, uint32_t field, int64_t v) {
    d9_pb_uint(b, field, (uint64_t)v);
}
static inline void d9_pb_fixed64(d9_buf *b, uint32_t field, uint64_t v) {
    d9_pb_tag(b, field, D9_PB_FIXED64);
    d9_put_u64(b, v); /* little-endian, as the wire format wants */
}
void d9_pb_bytes(d9_buf *b, uint32_t field, const void *p, size_t n);
void d9_pb_string(d9_buf *b, uint32_t field, const char *s); /* NUL-terminated */

/* A nested message (or a packed repeated field): write the tag, then the content, then close
 * it. The length prefix is inserted when the message is closed, as a minimal varint, so the
 * content is written once and moved by a few bytes. Returns the position to pass to
 * d9_pb_end(). Messages nest like brackets. */
size_t d9_pb_begin(d9_buf *b, uint32_t field);
void d9_pb_end(d9_buf *b, size_t pos);

#endif
