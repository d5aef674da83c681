/* Strings of an export (spawn locations, symbol names, file names, thread names), stored
 * once each and named by a dense index, so the exporters can intern them in their output
 * formats (Perfetto interned data, the pprof string table) by that index. Index 0 is "". */
#ifndef D9_EXPORT_STRING_POOL_H
#define D9_EXPORT_STRING_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "core/string_table.h"

#define D9_XSTR_FAILED UINT32_MAX

typedef struct d9_xstrings {
    d9_string_table table;  /* deduplication by content */
    const char **by_index;  /* the table's copies, by index */
    size_t count, cap;
} d9_xstrings;

/* 0 when it could not allocate (and d9_xstr_intern then fails too) */
int d9_xstr_init(d9_xstrings *s);
void d9_xstr_free(d9_xstrings *s);
/* The index of s[0..len) (cut at an embedded NUL), added on first sight; D9_XSTR_FAILED
 * when out of memory. */
uint32_t d9_xstr_intern(d9_xstrings *s, const char *str, size_t len);
static inline const char *d9_xstr_get(const d9_xstrings *s, uint32_t index) {
    return index < s->count ? s->by_index[index] : "";
}

#endif
