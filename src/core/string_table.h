/* Strings the collector writes to string pools (runtime names, thread names, drop reasons,
 * static strings of custom events), deduplicated by content: thread names live in buffers
 * that are freed, so an address is no identity. Each entry keeps its own copy. */
#ifndef D9_CORE_STRING_TABLE_H
#define D9_CORE_STRING_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash_slots.h"

typedef struct d9_string_entry {
    char *str;
    uint64_t hash;
    uint32_t index;   /* stable, dense: 0, 1, 2, ... */
    uint64_t mark;    /* stream number in which it was last written (collector's) */
} d9_string_entry;

typedef struct d9_string_table {
    d9_hash_slots hs; /* of d9_string_entry */
} d9_string_table;

void d9_string_table_free(d9_string_table *t);
/* The entry for s, added on first sight. NULL when out of memory. */
d9_string_entry *d9_string_table_get(d9_string_table *t, const char *s);

#endif
