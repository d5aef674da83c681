/* Name lookups on decoded schemas and events, for consumers (see decoder.h). These compare
 * strings: callers in hot loops resolve field indexes once per schema. */
#include <string.h>

#include "format/decoder.h"

int d9_schema_field_index(const d9_dec_schema *s, const char *name) {
    size_t n = strlen(name);
    for (uint32_t i = 0; i < s->field_count; i++)
        if (s->fields[i].name_len == n && memcmp(s->fields[i].name, name, n) == 0) return (int)i;
    return -1;
}

const char *d9_schema_annotation(const d9_dec_schema *s, int field_index, const char *key) {
    if (field_index < 0 || field_index >= s->field_count) return NULL;
    const d9_dec_field *f = &s->fields[field_index];
    for (uint32_t i = 0; i < f->annotation_count; i++)
        if (strcmp(f->annotations[i].key, key) == 0) return f->annotations[i].value;
    return NULL;
}

const d9_value *d9_event_field(const d9_event *ev, const char *name) {
    int i = d9_schema_field_index(ev->schema, name);
    return i < 0 ? NULL : &ev->values[i];
}

const char *d9_field_type_name(uint8_t type) {
    static const char *const names[] = {
        [D9_FT_I64] = "I64",
        [D9_FT_F64] = "F64",
        [D9_FT_BOOL] = "Bool",
        [D9_FT_STRING] = "String",
        [D9_FT_BYTES] = "Bytes",
        [D9_FT_POOLED_STACK] = "PooledStackFrames",
        [D9_FT_POOLED_STRING] = "PooledString",
        [D9_FT_STACK] = "StackFrames",
        [D9_FT_VARINT] = "Varint",
        [D9_FT_STRING_MAP] = "StringMap",
        [D9_FT_U8] = "U8",
        [D9_FT_U16] = "U16",
        [D9_FT_U32] = "U32",
        [D9_FT_DYN_LIST] = "DynamicList",
        [D9_FT_DYN_MAP] = "DynamicMap",
    };
    type &= 0x7f;
    return type < sizeof names / sizeof names[0] && names[type] ? names[type] : "?";
}
