/* Export strings (see string_pool.h), deduplicated by the recorder's string table. */
#include "export/string_pool.h"

#include <stdlib.h>
#include <string.h>

int d9_xstr_init(d9_xstrings *s) {
    memset(s, 0, sizeof *s);
    return d9_xstr_intern(s, "", 0) == 0 ? 1 : 0;
}

void d9_xstr_free(d9_xstrings *s) {
    d9_string_table_free(&s->table);
    free(s->by_index);
    memset(s, 0, sizeof *s);
}

uint32_t d9_xstr_intern(d9_xstrings *s, const char *str, size_t len) {
    char small[256];
    char *copy = len < sizeof small ? small : malloc(len + 1);
    if (!copy) return D9_XSTR_FAILED;
    if (len) memcpy(copy, str, len);
    copy[len] = '\0';
    d9_string_entry *e = d9_string_table_get(&s->table, copy);
    if (copy != small) free(copy);
    if (!e) return D9_XSTR_FAILED;
    if (e->index == s->count) { /* new: remember it by index */
        if (s->count == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 256;
            const char **p = realloc(s->by_index, cap * sizeof *p);
            if (!p) return D9_XSTR_FAILED; /* the entry stays, unreachable: harmless */
            s->by_index = p;
            s->cap = cap;
        }
        s->by_index[s->count++] = e->str;
    }
    return e->index;
}
