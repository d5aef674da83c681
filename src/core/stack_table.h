/* Call stacks the collector writes to stack pools, deduplicated by content, each written once
 * per stream (like the string table). */
#ifndef D9_CORE_STACK_TABLE_H
#define D9_CORE_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/hash_slots.h"

typedef struct d9_stack_entry {
    uint64_t *frames;
    uint32_t count;
    uint32_t index; /* dense: the pool id */
    uint64_t hash;
    uint64_t mark;  /* stream number in which it was last written */
} d9_stack_entry;

typedef struct d9_stack_table {
    d9_hash_slots hs; /* of d9_stack_entry */
} d9_stack_table;

void d9_stack_table_free(d9_stack_table *t);
/* The entry for this stack, added on first sight. NULL when out of memory. */
d9_stack_entry *d9_stack_table_get(d9_stack_table *t, const uint64_t *frames, uint32_t count);

#endif
