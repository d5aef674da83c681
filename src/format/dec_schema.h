/* The decoder's schema registry: every distinct schema seen by one decoder, interned by its
 * wire encoding (name, has_timestamp, fields), so a schema that each stream of a file
 * registers again is one d9_dec_schema with a stable pointer and index. Also keeps the field
 * annotations (frame 0x06). */
#ifndef D9_FORMAT_DEC_SCHEMA_H
#define D9_FORMAT_DEC_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "format/decoder.h"

typedef struct d9_schema_node d9_schema_node;

typedef struct d9_schema_reg {
    d9_arena arena;          /* names, fields, annotations: lives as long as the decoder */
    d9_schema_node **all;    /* by index */
    uint32_t count, cap;
    d9_schema_node **table;  /* hash table over the wire bodies */
    uint32_t table_mask;
    uint16_t max_fields;     /* largest field_count among the schemas */
} d9_schema_reg;

void d9_schema_reg_init(d9_schema_reg *r, size_t max_bytes);
void d9_schema_reg_free(d9_schema_reg *r);

/* Intern the schema whose wire body (from name_len through the last field type, as checked
 * by the decoder) is [body, body+len). Returns the existing schema when an identical one was
 * seen before, otherwise a new one; NULL when over the memory limit. */
d9_dec_schema *d9_schema_intern(d9_schema_reg *r, const uint8_t *body, size_t len,
                                uint16_t type_id);

/* Set annotation key=value on a field (replacing a different value of the same key).
 * Returns false when over the memory limit. */
bool d9_schema_annotate(d9_schema_reg *r, d9_dec_schema *s, uint16_t field_index,
                        const uint8_t *key, uint16_t key_len, const uint8_t *value,
                        uint32_t value_len);

#endif
