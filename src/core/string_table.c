#include "core/string_table.h"
#include <stdbool.h>

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void d9_string_table_free(d9_string_table *t) {
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        free(t->slots[i]->str);
        free(t->slots[i]);
    }
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static bool grow(d9_string_table *t) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    d9_string_entry **slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < t->cap; i++) {
        d9_string_entry *e = t->slots[i];
        if (!e) continue;
        size_t j = e->hash & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = e;
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return true;
}

d9_string_entry *d9_string_table_get(d9_string_table *t, const char *s) {
    if ((t->count + 1) * 2 > t->cap && !grow(t)) return NULL;
    uint64_t h = hash_str(s);
    size_t j = h & (t->cap - 1);
    for (; t->slots[j]; j = (j + 1) & (t->cap - 1))
        if (t->slots[j]->hash == h && strcmp(t->slots[j]->str, s) == 0) return t->slots[j];
    d9_string_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->str = strdup(s))) {
        free(e);
        return NULL;
    }
    e->hash = h;
    e->index = (uint32_t)t->count++;
    t->slots[j] = e;
    return e;
}
