#include "symbols/kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ksym {
    uint64_t addr;
    uint32_t name; /* offset in names */
    bool text;
} ksym;

struct d9_kallsyms {
    ksym *syms;
    size_t count, cap;
    char *names;
    size_t names_len, names_cap;
};

/* kallsyms gives no sizes: a text symbol covers up to the next symbol, but never more than
 * this (an address past the end of the kernel's text must not borrow the last name). */
#define MAX_KERNEL_SYMBOL_SPAN (256u * 1024u)

static bool add(d9_kallsyms *k, uint64_t addr, bool text, const char *name, size_t len) {
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

void d9_kallsyms_free(d9_kallsyms *k) {
    if (!k) return;
    free(k->syms);
    free(k->names);
    free(k);
}
