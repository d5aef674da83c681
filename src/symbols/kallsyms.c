#include "symbols/kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Laid out as in a serialized table, so a cache file's symbols are used where they are. */
typedef struct ksym {
    uint64_t addr;
    uint32_t name; /* offset in names */
    uint32_t text; /* 1: a text symbol, 0: data */
} ksym;
_Static_assert(sizeof(ksym) == 16, "ksym is a serialized symbol");

struct d9_kallsyms {
    ksym *syms;
    size_t count, cap;
    char *names;
    size_t names_len, names_cap;
    uint64_t range_lo, range_hi; /* a part (d9_kallsyms_image_part): the addresses it answers for */
    const void *bytes;           /* d9_kallsyms_from_bytes: syms and names point into these */
    size_t bytes_len;
    bool unmap_bytes;            /* ... which are a mapping of ours */
};

/* kallsyms gives no sizes: a text symbol covers up to the next symbol, but never more than
 * this (an address past the end of the kernel's text must not borrow the last name). */
#define MAX_KERNEL_SYMBOL_SPAN (256u * 1024u)

static bool add(d9_kallsyms *k, uint64_t addr, uint32_t text, const char *name, size_t len) {
    if (k->count == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 16384;
        ksym *s = realloc(k->syms, cap * sizeof *s);
        if (!s) return false;
        k->syms = s;
        k->cap = cap;
    }
    if (k->names_cap - k->names_len < len + 1) {
        size_t cap = k->names_cap ? k->names_cap : 1 << 20;
        while (cap - k->names_len < len + 1) cap *= 2;
        char *n = realloc(k->names, cap);
        if (!n) return false;
        k->names = n;
        k->names_cap = cap;
    }
    memcpy(k->names + k->names_len, name, len);
    k->names[k->names_len + len] = 0;
    k->syms[k->count++] = (ksym){.addr = addr, .name = (uint32_t)k->names_len, .text = text};
    k->names_len += len + 1;
    return k->names_len < UINT32_MAX;
}

static int by_addr(const void *a, const void *b) {
    const ksym *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    if (x->text != y->text) return x->text ? -1 : 1; /* a text name first at one address */
    return x->name < y->name ? -1 : x->name > y->name;
}

d9_kallsyms *d9_kallsyms_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    d9_kallsyms *k = calloc(1, sizeof *k);
    char line[1024];
    bool any_nonzero = false, oom = !k;
    while (!oom && fgets(line, sizeof line, f)) {
        char *end;
        uint64_t addr = strtoull(line, &end, 16);
        if (end == line || *end != ' ') continue;
        char type = end[1];
        if (!type || end[2] != ' ') continue;
        char *name = end + 3;
        size_t len = strcspn(name, "\t \n"); /* drop the "\t[module]" suffix */
        if (len == 0) continue;
        any_nonzero |= addr != 0;
        bool text = type == 't' || type == 'T' || type == 'w' || type == 'W';
        oom = !add(k, addr, text, name, len);
    }
    fclose(f);
    if (oom) {
        snprintf(err, errlen, "out of memory reading %s", path);
        d9_kallsyms_free(k);
        return NULL;
    }
    if (!any_nonzero) {
        snprintf(err, errlen, "%s shows no addresses (kernel.kptr_restrict)", path);
        d9_kallsyms_free(k);
        return NULL;
    }
    qsort(k->syms, k->count, sizeof *k->syms, by_addr);
    return k;
}

const char *d9_kallsyms_lookup(const d9_kallsyms *k, uint64_t addr) {
    size_t lo = 0, hi = k->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->syms[mid].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    size_t i = lo - 1;
    while (i > 0 && k->syms[i - 1].addr == k->syms[i].addr) i--; /* the group's first (text) */
    const ksym *s = &k->syms[i];
    if (!s->text || addr - s->addr > MAX_KERNEL_SYMBOL_SPAN) return NULL;
    return k->names + s->name;
}

size_t d9_kallsyms_count(const d9_kallsyms *k) { return k ? k->count : 0; }

/* Serialized: "D9KSYM01", u64 count, u64 names_len, u64 range_lo, u64 range_hi, then count x
 * (u64 addr, u32 name, u32 text), then the names (each NUL-terminated), in this host's byte
 * order (a cache never leaves the host). */
#define SER_MAGIC "D9KSYM01"
#define SER_HEADER 40u

void *d9_kallsyms_serialize(const d9_kallsyms *k, size_t *len) {
    size_t n = SER_HEADER + k->count * sizeof(ksym) + k->names_len;
    uint8_t *b = malloc(n), *p = b;
    if (!b) return NULL;
    uint64_t count = k->count, names_len = k->names_len;
    memcpy(p, SER_MAGIC, 8);
    memcpy(p + 8, &count, 8);
    memcpy(p + 16, &names_len, 8);
    memcpy(p + 24, &k->range_lo, 8);
    memcpy(p + 32, &k->range_hi, 8);
    if (k->count) memcpy(p + SER_HEADER, k->syms, k->count * sizeof(ksym));
    memcpy(p + SER_HEADER + k->count * sizeof(ksym), k->names, k->names_len);
    *len = n;
    return b;
}

d9_kallsyms *d9_kallsyms_from_bytes(const void *data, size_t len, bool unmap, char *err, size_t errlen) {
    const uint8_t *b = data;
    uint64_t count, names_len, lo, hi;
    /* the symbols are used in place: 8-byte aligned (a mapping, malloc) */
    if (len < SER_HEADER || ((uintptr_t)b & 7) || memcmp(b, SER_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a kallsyms table");
        return NULL;
    }
    memcpy(&count, b + 8, 8);
    memcpy(&names_len, b + 16, 8);
    memcpy(&lo, b + 24, 8);
    memcpy(&hi, b + 32, 8);
    /* sizes first, without overflow: every symbol and name byte must be there, nothing more */
    if (count > (len - SER_HEADER) / sizeof(ksym) || names_len != len - SER_HEADER - count * sizeof(ksym) ||
        names_len == 0 || names_len >= UINT32_MAX || b[len - 1] != 0 || lo > hi) {
        snprintf(err, errlen, "kallsyms table: sizes do not add up");
        return NULL;
    }
    const ksym *syms = (const ksym *)(const void *)(b + SER_HEADER);
    const char *names = (const char *)b + SER_HEADER + count * sizeof(ksym);
    for (size_t i = 0; i < count; i++) {
        const ksym *y = &syms[i];
        /* a name starts a string (the names end in NUL, so it ends one), in the order lookups need */
        if (y->name >= names_len || (y->name > 0 && names[y->name - 1] != 0) || y->text > 1 || y->addr < lo ||
            y->addr > hi || (i > 0 && by_addr(&syms[i - 1], y) > 0)) {
            snprintf(err, errlen, "kallsyms table: symbol %zu is not one", i);
            return NULL;
        }
    }
    d9_kallsyms *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    k->syms = (ksym *)syms; /* never written: the table is read-only once made */
    k->count = k->cap = count;
    k->names = (char *)names;
    k->names_len = k->names_cap = names_len;
    k->range_lo = lo;
    k->range_hi = hi;
    k->bytes = data;
    k->bytes_len = len;
    k->unmap_bytes = unmap;
    return k;
}

void d9_kallsyms_free(d9_kallsyms *k) {
    if (!k) return;
    if (k->bytes) {
        if (k->unmap_bytes) munmap((void *)k->bytes, k->bytes_len);
    } else {
        free(k->syms);
        free(k->names);
    }
    free(k);
}

static const ksym *find_named(const d9_kallsyms *k, const char *name) {
    for (size_t i = 0; i < k->count; i++)
        if (k->syms[i].text && strcmp(k->names + k->syms[i].name, name) == 0) return &k->syms[i];
    return NULL;
}

d9_kallsyms *d9_kallsyms_image_part(const d9_kallsyms *full) {
    const ksym *start = find_named(full, "_stext"), *end = find_named(full, "_etext");
    if (!start || !end || end->addr <= start->addr) return NULL;
    d9_kallsyms *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->range_lo = start->addr;
    k->range_hi = end->addr;
    /* in address order already: the part stays sorted */
    for (size_t i = 0; i < full->count; i++) {
        const ksym *s = &full->syms[i];
        if (s->addr < k->range_lo || s->addr > k->range_hi) continue;
        const char *name = full->names + s->name;
        if (!add(k, s->addr, s->text, name, strlen(name))) {
            d9_kallsyms_free(k);
            return NULL;
        }
    }
    return k;
}

bool d9_kallsyms_covers(const d9_kallsyms *k, uint64_t addr) {
    return k && addr >= k->range_lo && addr < k->range_hi;
}
