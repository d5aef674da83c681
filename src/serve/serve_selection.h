/* What one `dial9 serve --bucket` selected (src/fleet/s3_fetch.c writes it, dial9-serve reads it
 * with --selection FILE): the runs and their segments, and each run's wall-clock range from the
 * keys. The trace index serves only these, whatever else the cache directory holds (runs
 * fetched earlier by `dial9 analyze s3://...`, other segments of a run outside the window).
 *
 * The file, one record a line, fields separated by tabs, each field with tab, newline, '%' and
 * other control bytes as %XX:
 *   dial9-serve-selection 1
 *   source  s3://BUCKET/PREFIX
 *   run     NAME  FIRST  LAST        (directory under the served root, "." for the root; the
 *                                     first and last segment start, UTC seconds, -1 unknown)
 *   seg     FILE  SIZE  START  KEY   (a segment of the run above: its local name, the object's
 *                                     size, its start from the key, -1 unknown, and its key)
 * Numbers are decimal (or -1). A run's name has no empty, "." or ".." component, a file name
 * no '/' and is not "." or "..": nothing names a path outside the served root. No run is named
 * twice, nor a file twice in one run. */
#ifndef D9_SERVE_SERVE_SELECTION_H
#define D9_SERVE_SERVE_SELECTION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct d9_sel_seg {
    char *file, *key;
    uint64_t size;
    long long start;
} d9_sel_seg;

typedef struct d9_sel_run {
    char *name;
    long long first, last; /* UTC seconds, -1 unknown */
    d9_sel_seg *segs;      /* sorted by file name */
    size_t count;
} d9_sel_run;

typedef struct d9_serve_selection {
    char *source;          /* s3://BUCKET/PREFIX */
    d9_sel_run *runs;      /* sorted by name */
    size_t count;
} d9_serve_selection;

/* Read FILE into sel. 0, or -1 with a message (the line that is wrong). */
int d9_serve_selection_read(d9_serve_selection *sel, const char *path, char *err, size_t errlen);
/* The same from an open stream; name is what messages call it. */
int d9_serve_selection_parse(d9_serve_selection *sel, FILE *in, const char *name, char *err, size_t errlen);
void d9_serve_selection_free(d9_serve_selection *sel);

/* Write one field as the format wants it: tab, newline, '%' and control bytes as %XX. */
void d9_serve_selection_field(FILE *f, const char *s);

const d9_sel_run *d9_serve_selection_run(const d9_serve_selection *sel, const char *name);
const d9_sel_seg *d9_serve_selection_seg(const d9_sel_run *run, const char *file);

#endif
