/* The serve selection reader (src/serve/serve_selection.c) on arbitrary files: `--selection FILE`
 * can be written by hand, and dial9's fetch step reads what dial9-serve hands it in the same
 * format. It never reads past the input (ASan), leaks nothing, and what it accepts holds its
 * promises: no empty or dot-dot run or file names, no '/' in a file name, runs and their
 * segments sorted with no name twice (the lookups bsearch them), every run and segment found
 * again by its name. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fmemopen */
#endif
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_selection.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool dot_or_dotdot(const char *s, size_t n) { return (n == 1 && s[0] == '.') || (n == 2 && !memcmp(s, "..", 2)); }

/* A run's name: "." or components without empty, "." or ".." ones. */
static bool safe_run_name(const char *name) {
    if (!strcmp(name, ".")) return true;
    for (const char *p = name;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || dot_or_dotdot(p, n)) return false;
        if (!slash) return true;
        p = slash + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0; /* fmemopen wants a buffer */
    FILE *in = fmemopen((void *)data, size, "r");
    if (!in) return 0;
    d9_serve_selection sel;
    char err[256];
    int rc = d9_serve_selection_parse(&sel, in, "fuzz", err, sizeof err);
    fclose(in);
    if (rc != 0) {
        if (!err[0] || strnlen(err, sizeof err) == sizeof err) abort(); /* a message, terminated */
        return 0;
    }
    for (size_t i = 0; i < sel.count; i++) {
        const d9_sel_run *r = &sel.runs[i];
        if (!safe_run_name(r->name)) abort();
        if (i && strcmp(sel.runs[i - 1].name, r->name) >= 0) abort();
        if (d9_serve_selection_run(&sel, r->name) != r) abort();
        for (size_t k = 0; k < r->count; k++) {
            const d9_sel_seg *s = &r->segs[k];
            if (!s->file[0] || strchr(s->file, '/') || dot_or_dotdot(s->file, strlen(s->file))) abort();
            if (k && strcmp(r->segs[k - 1].file, s->file) >= 0) abort();
            if (d9_serve_selection_seg(r, s->file) != s) abort();
        }
    }
    d9_serve_selection_free(&sel);
    return 0;
}
