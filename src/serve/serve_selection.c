/* The selection of one `dial9 serve --bucket` (serve_selection.h). */
#include "serve/serve_selection.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 16384
#define MAX_FIELDS 6

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Undo the writer's %XX in place; false for a malformed escape (exactly two hex digits) or an
 * escaped NUL. */
static bool unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        int hi = hex_digit(r[1]), lo = hi < 0 ? -1 : hex_digit(r[2]);
        if (lo < 0 || (hi | lo) == 0) return false;
        *w++ = (char)(hi << 4 | lo);
        r += 2;
    }
    *w = '\0';
    return true;
}

/* A decimal number, or -1; nothing else (no sign, no spaces). */
static bool parse_ll(const char *s, long long *out) {
    if (!strcmp(s, "-1")) {
        *out = -1;
        return true;
    }
    if (!*s || strspn(s, "0123456789") != strlen(s)) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno) return false;
    *out = v;
    return true;
}

static bool dot_or_dotdot(const char *s, size_t n) { return (n == 1 && s[0] == '.') || (n == 2 && !memcmp(s, "..", 2)); }

/* A run is a directory beneath the served root ("." for the root): relative, and no component
 * empty, "." or "..", so no name leads out of it (dial9's fetch step writes there). */
static bool good_run_name(const char *name) {
    if (!strcmp(name, ".")) return true;
    for (const char *p = name;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || dot_or_dotdot(p, n)) return false;
        if (!slash) return true;
        p = slash + 1;
    }
}

static bool good_file_name(const char *name) {
    return name[0] && !strchr(name, '/') && !dot_or_dotdot(name, strlen(name));
}

static int by_run_name(const void *a, const void *b) {
    return strcmp(((const d9_sel_run *)a)->name, ((const d9_sel_run *)b)->name);
}
static int by_seg_file(const void *a, const void *b) {
    return strcmp(((const d9_sel_seg *)a)->file, ((const d9_sel_seg *)b)->file);
}

/* One line split at tabs and unescaped; the number of fields, or -1. */
static int split(char *line, char **f) {
    int n = 0;
    for (char *p = line;;) {
        if (n == MAX_FIELDS) return -1;
        f[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    for (int i = 0; i < n; i++)
        if (!unescape(f[i])) return -1;
    return n;
}

/* Room for one more element of size each in *v (capacity *cap, doubled): false when out of memory. */
static bool grow(void **v, size_t count, size_t *cap, size_t each) {
    if (count < *cap) return true;
    size_t n = *cap ? *cap * 2 : 16;
    void *p = realloc(*v, n * each);
    if (!p) return false;
    *v = p;
    *cap = n;
    return true;
}

static int add_line(d9_serve_selection *sel, size_t *run_cap, size_t *seg_cap, char **f, int n) {
    if (!strcmp(f[0], "source") && n == 2 && !sel->source) {
        return (sel->source = strdup(f[1])) ? 0 : -1;
    }
    if (!strcmp(f[0], "run") && n == 4) {
        d9_sel_run r = {0};
        if (!good_run_name(f[1]) || !parse_ll(f[2], &r.first) || !parse_ll(f[3], &r.last)) return -1;
        if (!grow((void **)&sel->runs, sel->count, run_cap, sizeof *sel->runs)) return -1;
        if (!(r.name = strdup(f[1]))) return -1;
        sel->runs[sel->count++] = r;
        *seg_cap = 0;
        return 0;
    }
    if (!strcmp(f[0], "seg") && n == 5 && sel->count) {
        d9_sel_run *r = &sel->runs[sel->count - 1];
        d9_sel_seg s = {0};
        long long size;
        if (!good_file_name(f[1]) || !parse_ll(f[2], &size) || size < 0 || !parse_ll(f[3], &s.start) || !f[4][0])
            return -1;
        s.size = (uint64_t)size;
        if (!grow((void **)&r->segs, r->count, seg_cap, sizeof *r->segs)) return -1;
        if (!(s.file = strdup(f[1])) || !(s.key = strdup(f[4]))) {
            free(s.file);
            return -1;
        }
        r->segs[r->count++] = s;
        return 0;
    }
    return -1;
}

/* Sorted for the lookups (bsearch), and a name twice would make them ambiguous: the first one
 * named twice, or NULL. */
static const char *sort_and_find_twice(d9_serve_selection *sel) {
    if (sel->count > 1) qsort(sel->runs, sel->count, sizeof *sel->runs, by_run_name);
    for (size_t i = 0; i < sel->count; i++) {
        d9_sel_run *r = &sel->runs[i];
        if (i && !strcmp(sel->runs[i - 1].name, r->name)) return r->name;
        if (r->count > 1) qsort(r->segs, r->count, sizeof *r->segs, by_seg_file);
        for (size_t k = 1; k < r->count; k++)
            if (!strcmp(r->segs[k - 1].file, r->segs[k].file)) return r->segs[k].file;
    }
    return NULL;
}

int d9_serve_selection_parse(d9_serve_selection *sel, FILE *in, const char *name, char *err, size_t errlen) {
    memset(sel, 0, sizeof *sel);
    char *line = malloc(MAX_LINE + 2);
    int rc = line ? 0 : -1;
    if (!line) snprintf(err, errlen, "out of memory");
    size_t run_cap = 0, seg_cap = 0;
    for (unsigned no = 1; rc == 0 && fgets(line, MAX_LINE + 2, in); no++) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n') line[--len] = '\0';
        else if (len > MAX_LINE) rc = -1;
        char *f[MAX_FIELDS];
        int n = rc == 0 ? split(line, f) : -1;
        if (no == 1) rc = strcmp(line, "dial9-serve-selection 1") ? -1 : 0;
        else if (n < 1 || add_line(sel, &run_cap, &seg_cap, f, n) != 0) rc = -1;
        if (rc != 0) snprintf(err, errlen, "--selection %s: line %u is not a selection record", name, no);
    }
    if (rc == 0 && ferror(in)) {
        snprintf(err, errlen, "--selection %s: %s", name, strerror(errno));
        rc = -1;
    }
    free(line);
    const char *twice = rc == 0 ? sort_and_find_twice(sel) : NULL;
    if (twice) {
        snprintf(err, errlen, "--selection %s: %s is named twice", name, twice);
        rc = -1;
    }
    if (rc != 0) {
        d9_serve_selection_free(sel);
        return -1;
    }
    return 0;
}

int d9_serve_selection_read(d9_serve_selection *sel, const char *path, char *err, size_t errlen) {
    memset(sel, 0, sizeof *sel);
    FILE *in = fopen(path, "re");
    if (!in) {
        snprintf(err, errlen, "--selection %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = d9_serve_selection_parse(sel, in, path, err, errlen);
    fclose(in);
    return rc;
}

void d9_serve_selection_free(d9_serve_selection *sel) {
    for (size_t i = 0; i < sel->count; i++) {
        for (size_t k = 0; k < sel->runs[i].count; k++) {
            free(sel->runs[i].segs[k].file);
            free(sel->runs[i].segs[k].key);
        }
        free(sel->runs[i].segs);
        free(sel->runs[i].name);
    }
    free(sel->runs);
    free(sel->source);
    memset(sel, 0, sizeof *sel);
}

void d9_serve_selection_field(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '%') fprintf(f, "%%%02X", *p);
        else fputc(*p, f);
    }
}

const d9_sel_run *d9_serve_selection_run(const d9_serve_selection *sel, const char *name) {
    d9_sel_run key = {.name = (char *)name};
    return sel->count ? bsearch(&key, sel->runs, sel->count, sizeof *sel->runs, by_run_name) : NULL;
}

const d9_sel_seg *d9_serve_selection_seg(const d9_sel_run *run, const char *file) {
    d9_sel_seg key = {.file = (char *)file};
    return run->count ? bsearch(&key, run->segs, run->count, sizeof *run->segs, by_seg_file) : NULL;
}
