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
    uint8_t tag;    /* part of the identity: how the stack was obtained (d9_stack_method) */
    uint8_t leaf_listed; /* D9_ADDR_* flags its leaf was listed with in stream `mark` (collector) */
} d9_stack_entry;

typedef struct d9_stack_table {
    d9_hash_slots hs; /* of d9_stack_entry */
} d9_stack_table;

void d9_stack_table_free(d9_stack_table *t);
/* The entry for this stack, added on first sight. NULL when out of memory. */
d9_stack_entry *d9_stack_table_get(d9_stack_table *t, const uint64_t *frames, uint32_t count);
/* The same, for stacks that also differ by `tag` (the same frames with two tags: two entries). */
d9_stack_entry *d9_stack_table_get_tagged(d9_stack_table *t, const uint64_t *frames, uint32_t count, uint8_t tag);

#endif
