#include "format/dec_skip_plan.h"

#include <stdlib.h>

#include "format/wire.h"

/* Wire size of a fixed-width type, 0 for a varint, -1 for a size known only by reading. */
static int fixed_size(uint8_t type) {
    switch (type) {
    case D9_FT_I64: case D9_FT_F64: return 8;
    case D9_FT_BOOL: case D9_FT_U8: return 1;
    case D9_FT_U16: return 2;
    case D9_FT_U32: case D9_FT_POOLED_STACK: case D9_FT_POOLED_STRING: return 4;
    case D9_FT_VARINT: return 0;
    default: return -1;
    }
}

bool d9_skip_plan_build(d9_skip_plan *pl, bool has_ts, const uint8_t *types, uint16_t nfields) {
    *pl = (d9_skip_plan){0};
    size_t nvarints = 0;
    for (uint16_t i = 0; i < nfields; i++) {
        bool optional = types[i] & D9_FT_OPTIONAL;
        int size = fixed_size(types[i] & (uint8_t)~D9_FT_OPTIONAL);
        if (size < 0 || (size > 0 && optional)) return false;
        nvarints += size == 0;
    }
    d9_skip_op *ops = malloc((nvarints + 1) * sizeof *ops);
    if (!ops) return false;
    uint32_t bytes = has_ts ? 3 : 0; /* the u24 timestamp delta */
    size_t n = 0, max_size = 0;
    for (uint16_t i = 0; i < nfields; i++) {
        bool optional = types[i] & D9_FT_OPTIONAL;
        int size = fixed_size(types[i] & (uint8_t)~D9_FT_OPTIONAL);
        if (size > 0) {
            bytes += (uint32_t)size;
            continue;
        }
        ops[n++] = (d9_skip_op){bytes, optional ? D9_SKIP_OPTIONAL_VARINT : D9_SKIP_VARINT};
        max_size += bytes + optional + 10;
        bytes = 0;
    }
    ops[n] = (d9_skip_op){bytes, D9_SKIP_END};
    max_size += bytes;
    *pl = (d9_skip_plan){.ops = ops, .max_size = max_size};
    return true;
}

void d9_skip_plan_free(d9_skip_plan *pl) {
    free(pl->ops);
    *pl = (d9_skip_plan){0};
}
