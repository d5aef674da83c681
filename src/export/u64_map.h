/* A hash map from 64-bit keys (addresses) to 32-bit values (indexes), open addressing. */
#ifndef D9_EXPORT_U64_MAP_H
#define D9_EXPORT_U64_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9_u64_map {
    uint64_t *keys;
    uint32_t *values;
    bool *used;
    size_t count;
    size_t cap; /* a power of two, or 0 */
} d9_u64_map;

/* The value stored under key, or false. */
bool d9_u64_map_get(const d9_u64_map *m, uint64_t key, uint32_t *value);
/* Store value under key (replacing). 0, or -1 when out of memory. */
int d9_u64_map_put(d9_u64_map *m, uint64_t key, uint32_t value);
void d9_u64_map_free(d9_u64_map *m);

#endif
