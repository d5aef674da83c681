/* An open-addressing hash map from 64-bit keys to 64-bit values (addresses to flags, pool ids
 * to file offsets). Grows by doubling; iteration order is unspecified. */
#ifndef D9_SYMBOLS_U64_TABLE_H
#define D9_SYMBOLS_U64_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_u64_table {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *used;
    size_t count, cap; /* cap is 0 or a power of two */
} d9_u64_table;

/* A pointer to the value of `key`, inserted as `init` when new; NULL on no memory. */
uint64_t *d9_u64_table_upsert(d9_u64_table *m, uint64_t key, uint64_t init);
/* A pointer to the value of `key`, or NULL when absent. */
uint64_t *d9_u64_table_get(const d9_u64_table *m, uint64_t key);
void d9_u64_table_clear(d9_u64_table *m); /* keeps the memory */
void d9_u64_table_free(d9_u64_table *m);

/* Iterate: for (size_t i = 0; d9_u64_table_next(m, &i, &k, &v);) */
bool d9_u64_table_next(const d9_u64_table *m, size_t *pos, uint64_t *key, uint64_t *val);

#endif
