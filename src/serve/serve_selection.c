/* The selection of one `dial9 serve --bucket` (serve_selection.h). */
#include "serve/serve_selection.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 16384
#define MAX_FIELDS 6

/* Undo the writer's %XX in place; false for a malformed escape or an escaped NUL. */
static bool unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        unsigned v;
        if (!r[1] || !r[2] || sscanf(r + 1, "%2x", &v) != 1 || v == 0) return false;
        *w++ = (char)v;
        r += 2;
    }
    *w = '\0';
    return true;
}

static bool parse_ll(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < -1) return false;
    *out = v;
    return true;
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

static int add_line(d9_serve_selection *sel, char **f, int n) {
    if (!strcmp(f[0], "source") && n == 2 && !sel->source) {
        return (sel->source = strdup(f[1])) ? 0 : -1;
    }
    if (!strcmp(f[0], "run") && n == 4) {
        d9_sel_run r = {0};
        if (!f[1][0] || !parse_ll(f[2], &r.first) || !parse_ll(f[3], &r.last)) return -1;
        d9_sel_run *v = realloc(sel->runs, (sel->count + 1) * sizeof *v);
        if (!v) return -1;
        sel->runs = v;
        if (!(r.name = strdup(f[1]))) return -1;
        sel->runs[sel->count++] = r;
        return 0;
    }
    if (!strcmp(f[0], "seg") && n == 5 && sel->count) {
        d9_sel_run *r = &sel->runs[sel->count - 1];
        d9_sel_seg s = {0};
        long long size;
        if (!f[1][0] || strchr(f[1], '/') || !parse_ll(f[2], &size) || size < 0 || !parse_ll(f[3], &s.start))
            return -1;
        s.size = (uint64_t)size;
        d9_sel_seg *v = realloc(r->segs, (r->count + 1) * sizeof *v);
        if (!v) return -1;
        r->segs = v;
        if (!(s.file = strdup(f[1])) || !(s.key = strdup(f[4]))) {
            free(s.file);
            return -1;
        }
        r->segs[r->count++] = s;
        return 0;
    }
    return -1;
}

int d9_serve_selection_read(d9_serve_selection *sel, const char *path, char *err, size_t errlen) {
    memset(sel, 0, sizeof *sel);
    FILE *in = fopen(path, "re");
    if (!in) {
        snprintf(err, errlen, "--selection %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = malloc(MAX_LINE + 2);
    int rc = line ? 0 : -1;
    if (!line) snprintf(err, errlen, "out of memory");
    for (unsigned no = 1; rc == 0 && fgets(line, MAX_LINE + 2, in); no++) {
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n') line[--len] = '\0';
        else if (len > MAX_LINE) rc = -1;
        char *f[MAX_FIELDS];
        int n = rc == 0 ? split(line, f) : -1;
        if (no == 1) rc = strcmp(line, "dial9-serve-selection 1") ? -1 : 0;
        else if (n < 1 || add_line(sel, f, n) != 0) rc = -1;
        if (rc != 0) snprintf(err, errlen, "--selection %s: line %u is not a selection record", path, no);
    }
    if (rc == 0 && ferror(in)) {
        snprintf(err, errlen, "--selection %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(line);
    fclose(in);
    if (rc != 0) {
        d9_serve_selection_free(sel);
        return -1;
    }
    if (sel->count > 1) qsort(sel->runs, sel->count, sizeof *sel->runs, by_run_name);
    for (size_t i = 0; i < sel->count; i++)
        if (sel->runs[i].count > 1) qsort(sel->runs[i].segs, sel->runs[i].count, sizeof *sel->runs[i].segs, by_seg_file);
    return 0;
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

const d9_sel_run *d9_serve_selection_run(const d9_serve_selection *sel, const char *name) {
    d9_sel_run key = {.name = (char *)name};
    return sel->count ? bsearch(&key, sel->runs, sel->count, sizeof *sel->runs, by_run_name) : NULL;
}

const d9_sel_seg *d9_serve_selection_seg(const d9_sel_run *run, const char *file) {
    d9_sel_seg key = {.file = (char *)file};
    return run->count ? bsearch(&key, run->segs, run->count, sizeof *run->segs, by_seg_file) : NULL;
}
