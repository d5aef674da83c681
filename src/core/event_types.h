/* Custom application event types (d9_event_type_define): an immutable table the hooks and the
 * collector share. Record payload: one word per field; a D9_STRING field takes one length word
 * then its bytes, padded to whole words. */
#ifndef D9_CORE_EVENT_TYPES_H
#define D9_CORE_EVENT_TYPES_H

#include <stdint.h>

#include "dial9/dial9.h"
#include "format/encoder.h"

#define D9_MAX_EVENT_TYPES 1024
#define D9_MAX_EVENT_FIELDS 32
#define D9_MAX_STRING_ARG 1024

struct d9_event_type {
    uint32_t index;
    uint16_t field_count;
    bool has_strings;
    d9_field_kind kinds[D9_MAX_EVENT_FIELDS];
    d9_schema_field wire_fields[D9_MAX_EVENT_FIELDS];
    d9_schema_def def; /* the wire schema */
};

/* The type with this index, or NULL. */
const d9_event_type *d9_event_type_at(uint32_t index);

/* fork(): hold (true) or release the registry's lock (core/fork_guard.c). */
void d9_event_types_fork_hold(bool hold);

#endif
