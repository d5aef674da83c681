/* `dial9 diff`'s heap section (docs/diff.md, "Heap"): when both runs have heap samples, each
 * allocation site's weighted allocated bytes and bytes in use at the end on each side (the
 * model's sums, model/heap_sites.h, as analyze's HEAP section has them), and the change,
 * ranked with the growth of in-use bytes first.
 *
 * A site is analyze's (the sample's whole stack), named across runs by its frames, root first,
 * ';'-separated (symbols with their inline levels, hex where a frame has no symbol): two runs
 * place code at other addresses, so only the names can match; stacks of one run with the same
 * names are one site. */
#ifndef D9_ANALYSIS_DIFF_HEAP_H
#define D9_ANALYSIS_DIFF_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "analysis/intern.h"
#include "common/json_writer.h"

typedef struct d9d_heap_side {
    uint64_t rate, samples, frees; /* bytes per sample (metadata), samples and frees seen */
    double alloc_bytes, inuse_bytes; /* weighted, every site */
} d9d_heap_side;

typedef struct d9d_heap_row {
    const char *site;              /* frames root first, ';'-separated; ';' in a name is ':' */
    double alloc_bytes[2], inuse_bytes[2]; /* A, B; inuse: at the end of the trace */
    uint64_t samples[2];
} d9d_heap_row;

typedef struct d9d_heap {
    d9d_heap_side side[2];
    d9d_heap_row *rows; /* ranked: in-use change, largest growth first; then allocated change */
    size_t nrows;
    d9a_strings names;  /* owns the site names */
} d9d_heap;

/* Whether an analysis has heap samples (the section needs both sides to). */
bool d9d_heap_present(const d9a_analysis *a);

/* The section of two finished analyses, both with samples. 0, or -1 when out of memory. */
int d9d_heap_build(d9d_heap *h, const d9a_analysis *a, const d9a_analysis *b);
void d9d_heap_free(d9d_heap *h);

/* The in-use change of a row, and the relative one (B/A - 1, in %; infinite from nothing). */
double d9d_heap_inuse_change(const d9d_heap_row *r);
double d9d_heap_inuse_change_pct(const d9d_heap_row *r);

/* --fail-on heap_inuse=+X: the first site (in rank order) whose in-use bytes at the end grew by
 * at least X % of A's (`relative`; a site with nothing in use in A and something in B grew
 * from nothing, which breaks any percentage) or by at least `bytes`. Its row, or NULL. */
const d9d_heap_row *d9d_heap_grown(const d9d_heap *h, bool relative, double percent, uint64_t bytes);

/* The section's text (at most `top` sites, 0: all) and its JSON value (the "heap" key's). */
void d9d_heap_print_text(FILE *out, const d9d_heap *h, size_t top);
void d9d_heap_print_json(d9_json *j, const d9d_heap *h);


#endif
