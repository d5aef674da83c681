/* The differential folded stacks of `dial9 diff --flame` (diff_flame.h). */
#include "analysis/diff_flame.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

#define MAX_FRAMES 512 /* frames per expanded stack, as the report's */

typedef struct folded {
    d9a_strings lines; /* "cpu;root;...;leaf" -> dense id */
    uint64_t *count[2];
    uint32_t cap;
    char *buf;
    size_t buf_len, buf_cap;
} folded;

static int put(folded *f, const char *s, size_t n, bool name) {
    if (f->buf_len + n + 1 > f->buf_cap) {
        size_t cap = f->buf_cap ? f->buf_cap : 4096;
        while (cap < f->buf_len + n + 1) cap *= 2;
        char *p = realloc(f->buf, cap);
        if (!p) return -1;
        f->buf = p;
        f->buf_cap = cap;
    }
    /* ';' separates frames and the line ends with the counts: ';' becomes ':', line breaks
     * spaces, as `export -f folded` writes names */
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (name) c = c == ';' ? ':' : (c == '\n' || c == '\r') ? ' ' : c;
        f->buf[f->buf_len++] = c;
    }
    f->buf[f->buf_len] = 0;
    return 0;
}

static int add_line(folded *f, int side, uint64_t n) {
    uint32_t k = d9a_strings_intern(&f->lines, f->buf, f->buf_len);
    if (k == UINT32_MAX) return -1;
    if (k >= f->cap) {
        uint32_t cap = f->cap ? f->cap * 2 : 256;
        while (cap <= k) cap *= 2;
        for (int s = 0; s < 2; s++) {
            uint64_t *p = realloc(f->count[s], cap * sizeof *p);
            if (!p) return -1;
            memset(p + f->cap, 0, (cap - f->cap) * sizeof *p);
            f->count[s] = p;
        }
        f->cap = cap;
    }
    f->count[side][k] += n;
    return 0;
}

/* The stack's frames, root first, after `root`, in f->buf. */
static int fold(folded *f, const d9a_analysis *ca, uint32_t id, const char *root);

static int add_side(folded *f, const d9a_analysis *a, int side) {
    for (uint32_t id = 0; id < a->stacks.count && id < a->stk_cap; id++) {
        const stack_stats *s = &a->stk[id];
        if (s->cpu && (fold(f, a, id, "cpu") != 0 || add_line(f, side, s->cpu) != 0)) return -1;
        if (s->off && (fold(f, a, id, "off-cpu") != 0 || add_line(f, side, s->off) != 0)) return -1;
    }
    return 0;
}

static int fold(folded *f, const d9a_analysis *ca, uint32_t id, const char *root) {
    /* the symbol table expands inline levels into the analysis's strings (symtab.h): the
     * analysis is finished, the table is read-only for what it holds already */
    d9a_analysis *a = (d9a_analysis *)ca;
    f->buf_len = 0;
    if (put(f, root, strlen(root), false) != 0) return -1;
    uint32_t naddrs;
    const uint64_t *addrs = d9a_stacks_get(&a->stacks, id, &naddrs);
    d9a_frame frames[MAX_FRAMES];
    uint32_t n = 0;
    for (uint32_t i = 0; i < naddrs && n < MAX_FRAMES; i++)
        n += d9a_symtab_expand(&a->symtab, addrs[i], frames + n, MAX_FRAMES - n);
    for (uint32_t i = n; i-- > 0;) {
        char hex[32];
        const char *name = frames[i].symbol;
        if (!name) {
            snprintf(hex, sizeof hex, "0x%" PRIx64, frames[i].addr);
            name = hex;
        }
        if (put(f, ";", 1, false) != 0 || put(f, name, strlen(name), true) != 0) return -1;
    }
    return 0;
}

static const folded *sort_ctx;
static int cmp_ids(const void *x, const void *y) {
    return strcmp(d9a_strings_get(&sort_ctx->lines, *(const uint32_t *)x),
                  d9a_strings_get(&sort_ctx->lines, *(const uint32_t *)y));
}

int d9d_write_flame(FILE *out, const d9a_analysis *a, const d9a_analysis *b) {
    folded f = {0};
    int rc = add_side(&f, a, 0) || add_side(&f, b, 1) ? -1 : 0;
    uint32_t n = f.lines.count;
    uint32_t *order = rc == 0 ? malloc((n ? n : 1) * sizeof *order) : NULL;
    if (!order) rc = -1;
    if (rc == 0) {
        for (uint32_t i = 0; i < n; i++) order[i] = i;
        sort_ctx = &f;
        qsort(order, n, sizeof *order, cmp_ids);
        for (uint32_t i = 0; i < n; i++)
            fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", d9a_strings_get(&f.lines, order[i]), f.count[0][order[i]],
                    f.count[1][order[i]]);
        if (fflush(out) != 0 || ferror(out)) rc = -1;
    }
    free(order);
    d9a_strings_free(&f.lines);
    free(f.count[0]);
    free(f.count[1]);
    free(f.buf);
    return rc;
}
