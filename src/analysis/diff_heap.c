/* `dial9 diff`'s heap section (diff_heap.h). */
#include "analysis/diff_heap.h"

#include <inttypes.h>
#include <math.h> /* INFINITY, isinf: no libm call */
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"
#include "common/bytes_text.h"

#define MAX_FRAMES 512 /* frames per expanded stack, as the report's */

bool d9d_heap_present(const d9a_analysis *a) { return a && a->heap.samples > 0; }

typedef struct name_buf {
    char *p;
    size_t len, cap;
} name_buf;

static int put(name_buf *b, const char *s, bool name) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    for (size_t i = 0; i < n; i++) b->p[b->len++] = name && s[i] == ';' ? ':' : s[i]; /* ';' parts frames */
    b->p[b->len] = 0;
    return 0;
}

/* The site's name: the stack's frames, root first (inline levels expanded). */
static int site_name(name_buf *b, const d9a_analysis *ca, uint32_t stack) {
    /* the symbol table expands into the analysis's strings: the analysis is finished, the table
     * read-only for what it holds already (as diff_flame.c reads it) */
    d9a_analysis *a = (d9a_analysis *)ca;
    b->len = 0;
    if (put(b, "", false) != 0) return -1;
    uint32_t naddrs;
    const uint64_t *addrs = d9a_stacks_get(&a->stacks, stack, &naddrs);
    d9a_frame frames[MAX_FRAMES];
    uint32_t n = 0;
    for (uint32_t i = 0; addrs && i < naddrs && n < MAX_FRAMES; i++)
        n += d9a_symtab_expand(&a->symtab, addrs[i], frames + n, MAX_FRAMES - n);
    if (n == 0) return put(b, "<no stack>", false);
    for (uint32_t i = n; i-- > 0;) {
        char hex[32];
        const char *name = frames[i].symbol;
        if (!name) {
            snprintf(hex, sizeof hex, "0x%" PRIx64, frames[i].addr);
            name = hex;
        }
        if ((i + 1 < n && put(b, ";", false) != 0) || put(b, name, true) != 0) return -1;
    }
    return 0;
}

static int grow_rows(d9d_heap *h, uint32_t k, size_t *cap) {
    if (k < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c <= k) c *= 2;
    d9d_heap_row *r = realloc(h->rows, c * sizeof *r);
    if (!r) return -1;
    memset(r + *cap, 0, (c - *cap) * sizeof *r);
    h->rows = r;
    *cap = c;
    return 0;
}

static int add_side(d9d_heap *h, const d9a_analysis *a, int side, name_buf *b, size_t *cap) {
    const d9m_heap *m = &a->heap;
    d9d_heap_side *s = &h->side[side];
    s->rate = m->rate ? m->rate : 512 * 1024; /* the model's default, as analyze reports it */
    s->samples = m->samples;
    s->frees = m->frees;
    for (size_t i = 0; i < m->nsites; i++) {
        const d9m_heap_site *site = &m->sites[i];
        if (site_name(b, a, site->stack) != 0) return -1;
        uint32_t k = d9a_strings_intern(&h->names, b->p, b->len);
        if (k == UINT32_MAX || grow_rows(h, k, cap) != 0) return -1;
        d9d_heap_row *r = &h->rows[k];
        r->alloc_bytes[side] += site->alloc_bytes;
        r->inuse_bytes[side] += site->inuse_bytes;
        r->samples[side] += site->samples;
        s->alloc_bytes += site->alloc_bytes;
        s->inuse_bytes += site->inuse_bytes;
    }
    return 0;
}

double d9d_heap_inuse_change(const d9d_heap_row *r) { return r->inuse_bytes[1] - r->inuse_bytes[0]; }

double d9d_heap_inuse_change_pct(const d9d_heap_row *r) {
    if (r->inuse_bytes[0] > 0) return 100 * (r->inuse_bytes[1] / r->inuse_bytes[0] - 1);
    return r->inuse_bytes[1] > 0 ? INFINITY : 0;
}

static int by_growth(const void *x, const void *y) {
    const d9d_heap_row *a = x, *b = y;
    double ga = d9d_heap_inuse_change(a), gb = d9d_heap_inuse_change(b);
    if (ga != gb) return ga < gb ? 1 : -1;
    double aa = a->alloc_bytes[1] - a->alloc_bytes[0], ab = b->alloc_bytes[1] - b->alloc_bytes[0];
    if (aa != ab) return aa < ab ? 1 : -1;
    return strcmp(a->site, b->site);
}

int d9d_heap_build(d9d_heap *h, const d9a_analysis *a, const d9a_analysis *b) {
    *h = (d9d_heap){0};
    name_buf buf = {0};
    size_t cap = 0;
    int rc = add_side(h, a, 0, &buf, &cap) || add_side(h, b, 1, &buf, &cap) ? -1 : 0;
    free(buf.p);
    if (rc != 0) {
        d9d_heap_free(h);
        return -1;
    }
    h->nrows = h->names.count;
    for (size_t i = 0; i < h->nrows; i++) h->rows[i].site = d9a_strings_get(&h->names, (uint32_t)i);
    if (h->nrows) qsort(h->rows, h->nrows, sizeof *h->rows, by_growth);
    return 0;
}

void d9d_heap_free(d9d_heap *h) {
    free(h->rows);
    d9a_strings_free(&h->names);
    *h = (d9d_heap){0};
}

const d9d_heap_row *d9d_heap_grown(const d9d_heap *h, bool relative, double percent, uint64_t bytes) {
    for (size_t i = 0; i < h->nrows; i++) {
        const d9d_heap_row *r = &h->rows[i];
        double change = d9d_heap_inuse_change(r);
        if (change <= 0) continue;
        if (relative ? d9d_heap_inuse_change_pct(r) >= percent : change >= (double)bytes) return r;
    }
    return NULL;
}

/* The site as a reader looks for it: the leaf, then its callers ("leak_inner <- leak_middle <- ..."). */
static void print_site(FILE *out, const char *site) {
    const char *end = site + strlen(site);
    int shown = 0;
    while (end > site && shown < 4) {
        const char *start = end;
        while (start > site && start[-1] != ';') start--;
        fprintf(out, "%s%.*s", shown ? " <- " : "", (int)(end - start), start);
        shown++;
        end = start > site ? start - 1 : site;
    }
    if (end > site) fprintf(out, " <- ...");
}

static const char *change_str(char *buf, size_t len, double change) {
    if (len < 2) return "";
    buf[0] = '+';
    d9_bytes_text(buf + (change > 0), len - 1, change);
    return buf;
}

void d9d_heap_print_text(FILE *out, const d9d_heap *h, size_t top) {
    char x[32], y[32], z[32], w[32], v[32];
    fprintf(out, "\nHEAP (sampled, weighted estimates; in use at the end of each run)\n");
    for (int s = 0; s < 2; s++)
        fprintf(out, "  %c  one sample per %" PRIu64 " bytes, %" PRIu64 " samples, %" PRIu64
                     " frees; allocated %s, in use at end %s\n",
                s ? 'B' : 'A', h->side[s].rate, h->side[s].samples, h->side[s].frees,
                d9_bytes_text(x, sizeof x, h->side[s].alloc_bytes), d9_bytes_text(y, sizeof y, h->side[s].inuse_bytes));
    fprintf(out, "  in use at end %s -> %s (%s)\n", d9_bytes_text(x, sizeof x, h->side[0].inuse_bytes),
            d9_bytes_text(y, sizeof y, h->side[1].inuse_bytes),
            change_str(z, sizeof z, h->side[1].inuse_bytes - h->side[0].inuse_bytes));
    fprintf(out, "\n%12s %12s %12s %8s %12s %12s  %s\n", "in use A", "in use B", "change", "%", "alloc A", "alloc B",
            "site (leaf <- callers)");
    size_t n = top && top < h->nrows ? top : h->nrows;
    for (size_t i = 0; i < n; i++) {
        const d9d_heap_row *r = &h->rows[i];
        double pct = d9d_heap_inuse_change_pct(r);
        char p[32];
        if (isinf(pct)) snprintf(p, sizeof p, "new");
        else snprintf(p, sizeof p, "%+.0f%%", pct);
        fprintf(out, "%12s %12s %12s %8s %12s %12s  ", d9_bytes_text(x, sizeof x, r->inuse_bytes[0]),
                d9_bytes_text(y, sizeof y, r->inuse_bytes[1]), change_str(z, sizeof z, d9d_heap_inuse_change(r)), p,
                d9_bytes_text(w, sizeof w, r->alloc_bytes[0]), d9_bytes_text(v, sizeof v, r->alloc_bytes[1]));
        print_site(out, r->site);
        fputc('\n', out);
    }
    if (n < h->nrows) fprintf(out, "... %zu more sites (--top 0 for all)\n", h->nrows - n);
}

static void side_json(d9_json *j, const char *key, const d9d_heap_side *s) {
    d9_json_key(j, key);
    d9_json_object_begin(j);
    d9_json_key_u64(j, "sample_rate_bytes", s->rate);
    d9_json_key_u64(j, "samples", s->samples);
    d9_json_key_u64(j, "frees", s->frees);
    d9_json_key_f64(j, "alloc_bytes", s->alloc_bytes);
    d9_json_key_f64(j, "inuse_bytes", s->inuse_bytes);
    d9_json_object_end(j);
}

void d9d_heap_print_json(d9_json *j, const d9d_heap *h) {
    d9_json_object_begin(j);
    side_json(j, "a", &h->side[0]);
    side_json(j, "b", &h->side[1]);
    d9_json_key(j, "sites");
    d9_json_array_begin(j);
    for (size_t i = 0; i < h->nrows; i++) {
        const d9d_heap_row *r = &h->rows[i];
        d9_json_object_begin(j);
        d9_json_key_u64(j, "rank", i + 1);
        d9_json_key_string(j, "site", r->site);
        for (int s = 0; s < 2; s++) {
            d9_json_key(j, s ? "b" : "a");
            d9_json_object_begin(j);
            d9_json_key_f64(j, "alloc_bytes", r->alloc_bytes[s]);
            d9_json_key_f64(j, "inuse_bytes", r->inuse_bytes[s]);
            d9_json_key_u64(j, "samples", r->samples[s]);
            d9_json_object_end(j);
        }
        d9_json_key_f64(j, "inuse_change_bytes", d9d_heap_inuse_change(r));
        d9_json_key_f64(j, "inuse_change_pct", d9d_heap_inuse_change_pct(r)); /* null: from nothing */
        d9_json_key_f64(j, "alloc_change_bytes", r->alloc_bytes[1] - r->alloc_bytes[0]);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}
