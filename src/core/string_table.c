#include "core/string_table.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void d9_string_table_free(d9_string_table *t) {
    for (size_t i = 0; i < t->hs.cap; i++) {
        d9_string_entry *e = t->hs.slots[i];
        if (!e) continue;
        free(e->str);
        free(e);
    }
    free(t->hs.slots);
    memset(t, 0, sizeof *t);
}

d9_string_entry *d9_string_table_get(d9_string_table *t, const char *s) {
    if (!d9_hash_slots_reserve(&t->hs, offsetof(d9_string_entry, hash))) return NULL;
    uint64_t h = hash_str(s);
    size_t mask = t->hs.cap - 1, j = h & mask;
    for (d9_string_entry *e; (e = t->hs.slots[j]); j = (j + 1) & mask)
        if (e->hash == h && strcmp(e->str, s) == 0) return e;
    d9_string_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->str = strdup(s))) {
        free(e);
        return NULL;
    }
    e->hash = h;
    e->index = (uint32_t)t->hs.count++;
    t->hs.slots[j] = e;
    return e;
}
