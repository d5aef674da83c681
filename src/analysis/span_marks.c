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

/* Stable merge sort by timestamp of a[0..n), bottom up, through tmp (room for n). */
static void sort_by_ts(d9a_span_mark *a, d9a_span_mark *tmp, size_t n) {
    d9a_span_mark *src = a, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, w = lo;
            while (i < mid && j < hi) dst[w++] = src[j].ts < src[i].ts ? src[j++] : src[i++];
            while (i < mid) dst[w++] = src[i++];
            while (j < hi) dst[w++] = src[j++];
        }
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
    sort_by_ts(p, tmp, n);
    s->unordered = false;
    return p;
}

void d9a_span_marks_free(d9a_span_marks *s) {
    free(s->m);
    free(s->tmp);
    memset(s, 0, sizeof *s);
}
