/* dial9 trace format v1: the constants of the wire format (see docs/format.md and
 * ../shared/reference/trace-format.md). Shared by the encoder and the decoder. */
#ifndef D9_FORMAT_WIRE_H
#define D9_FORMAT_WIRE_H

#include <stdint.h>

#define D9_MAGIC0 0x54 /* 'T' */
#define D9_MAGIC1 0x52 /* 'R' */
#define D9_MAGIC2 0x43 /* 'C' */
#define D9_MAGIC3 0x00
#define D9_FORMAT_VERSION 1
#define D9_HEADER_SIZE 5

enum d9_frame_tag {
    D9_FRAME_SCHEMA = 0x01,
    D9_FRAME_EVENT = 0x02,
    D9_FRAME_STRING_POOL = 0x03,
    D9_FRAME_STACK_POOL = 0x04,
    D9_FRAME_TIMESTAMP_RESET = 0x05,
    D9_FRAME_ANNOTATIONS = 0x06,
};

enum d9_field_type {
    D9_FT_I64 = 1,
    D9_FT_F64 = 2,
    D9_FT_BOOL = 3,
    D9_FT_STRING = 4,
    D9_FT_BYTES = 5,
    D9_FT_POOLED_STACK = 6,
    D9_FT_POOLED_STRING = 7,
    D9_FT_STACK = 8,
    D9_FT_VARINT = 9,
    D9_FT_STRING_MAP = 10,
    D9_FT_U8 = 11,
    D9_FT_U16 = 12,
    D9_FT_U32 = 13,
    D9_FT_DYN_LIST = 14,
    D9_FT_DYN_MAP = 15,
    D9_FT_OPTIONAL = 0x80, /* flag: a presence byte precedes the value */
};

#define D9_TS_DELTA_MAX 16777215u /* largest u24 timestamp delta */
#define D9_WORKER_BLOCKING 254u
#define D9_WORKER_NONE 255u

#endif
