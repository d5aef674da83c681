#include "analysis/span_marks.h"

#include <stdlib.h>
#include <string.h>

int d9a_span_marks_grow(d9a_span_marks *s) {
    if (s->head > 0) { /* handed-on marks leave room at the front */
        memmove(s->m, s->m + s->head, (s->n - s->head) * sizeof *s->m);
        s->n -= s->head;
        s->head = 0;
        if (s->n < s->cap) return 0;
    }
    size_t cap = s->cap ? s->cap * 2 : 1024;
    d9a_span_mark *p = realloc(s->m, cap * sizeof *p);
    if (!p) return -1;
    s->m = p;
    s->cap = cap;
    return 0;
}

/* Stable merge sort by timestamp of a[0..n), through tmp (room for n), from the runs already in
 * order (runs: room for n + 1): the marks of a few writing threads, each in time order, come as
 * long runs, so this merges log2(runs) times, not log2(n). */
static void sort_by_ts(d9a_span_mark *a, d9a_span_mark *tmp, size_t *runs, size_t n) {
    size_t nr = 0; /* run k is [runs[k], runs[k + 1]) */
    runs[nr++] = 0;
    for (size_t i = 1; i < n; i++)
        if (a[i].ts < a[i - 1].ts) runs[nr++] = i;
    runs[nr] = n;
    d9a_span_mark *src = a, *dst = tmp;
    while (nr > 1) {
        size_t w = 0;
        for (size_t k = 0; k < nr; k += 2) {
            size_t lo = runs[k], mid = runs[k + 1], hi = k + 2 <= nr ? runs[k + 2] : mid;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) dst[o++] = src[j].ts < src[i].ts ? src[j++] : src[i++];
            while (i < mid) dst[o++] = src[i++];
            while (j < hi) dst[o++] = src[j++];
            runs[w++] = lo;
        }
        runs[w] = n;
        nr = w;
        d9a_span_mark *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
}

const d9a_span_mark *d9a_span_marks_in_order(d9a_span_marks *s) {
    d9a_span_mark *p = s->m + s->head;
    if (!s->unordered) return p;
    size_t n = s->n - s->head;
    d9a_span_mark *tmp = realloc(s->tmp, (n ? n : 1) * sizeof *tmp);
    if (!tmp) return NULL;
    s->tmp = tmp;
    size_t *runs = realloc(s->runs, (n + 1) * sizeof *runs);
    if (!runs) return NULL;
    s->runs = runs;
    sort_by_ts(p, tmp, runs, n);
    s->unordered = false;
    return p;
}

void d9a_span_marks_free(d9a_span_marks *s) {
    free(s->m);
    free(s->tmp);
    free(s->runs);
    memset(s, 0, sizeof *s);
}
