/* Set of u64 on the u64 map (see u64_set.h). */
#include "common/u64_set.h"

#include <stdlib.h>

int d9_u64_set_add(d9_u64_set *s, uint64_t v) {
    if (d9_u64_set_has(s, v)) return 0;
    return d9_u64_map_upsert(&s->map, v, 0) ? 1 : -1;
}

bool d9_u64_set_next(const d9_u64_set *s, size_t *pos, uint64_t *v) {
    uint64_t unused;
    return d9_u64_map_next(&s->map, pos, v, &unused);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t *d9_u64_set_sorted(const d9_u64_set *s) {
    if (!s->map.count) return NULL;
    uint64_t *out = malloc(s->map.count * sizeof *out);
    if (!out) return NULL;
    size_t n = 0;
    uint64_t v;
    for (size_t pos = 0; d9_u64_set_next(s, &pos, &v);) out[n++] = v;
    qsort(out, n, sizeof *out, cmp_u64);
    return out;
}

void d9_u64_set_clear(d9_u64_set *s) { d9_u64_map_clear(&s->map); }
void d9_u64_set_free(d9_u64_set *s) { d9_u64_map_free(&s->map); }
