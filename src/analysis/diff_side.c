/* The groups `dial9 diff` compares, read from an analysis's own tables (diff_side.h). */
#include "analysis/diff_side.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

void d9d_side_from(d9d_side *s, const d9a_report *r, bool readable, const char *label) {
    *s = (d9d_side){.label = label};
    s->start_ns = r->start_ns;
    s->end_ns = r->end_ns;
    s->duration_ns = r->duration_ns;
    s->windowed = r->windowed;
    s->events = r->events;
    s->polls = r->polls.count;
    s->dropped = r->dropped;
    s->unmatched_polls = r->unmatched_poll_starts + r->unmatched_poll_ends;
    s->readable = readable;
    s->upload_lost_segments = r->upload_lost.segments;
    for (size_t i = 0; i < r->ncoverage && s->npartial < sizeof s->partial / sizeof s->partial[0]; i++)
        if (r->coverage[i].partial) s->partial[s->npartial++] = r->coverage[i].name;
    s->lost_data = s->dropped > 0 || !readable || s->upload_lost_segments > 0;
}

/* ---- the table: one line per group kind and measure ---- */

static uint32_t loc_count(const d9a_analysis *a) { return a->locs_cap; }
static const char *loc_name(const d9a_analysis *a, uint32_t id) { return d9a_strings_get(&a->strings, id); }
static const d9a_hist *loc_poll_ns(const d9a_analysis *a, uint32_t id) {
    return a->locs[id].polls.count ? &a->locs[id].polls : NULL;
}

typedef struct group_measure {
    const char *kind, *measure;
    uint32_t (*count)(const d9a_analysis *a);                     /* ids 0 .. count-1 */
    const char *(*name)(const d9a_analysis *a, uint32_t id);
    const d9a_hist *(*hist)(const d9a_analysis *a, uint32_t id); /* NULL: nothing measured */
} group_measure;

/* The first line is what --slowest splits and what the ranking's totals count. The attribution
 * parts of a poll (src/model/attribution, when it lands) are one line each here, e.g.
 *   {"spawn_location", "on_cpu_ns", loc_count, loc_name, loc_on_cpu_ns},
 * and span names one more kind: {"span", "elapsed_ns", span_count, span_name, span_elapsed_ns}. */
static const group_measure table[] = {
    {"spawn_location", "poll_ns", loc_count, loc_name, loc_poll_ns},
};

/* Names of both analyses to one dense id each, with each side's histogram. */
typedef struct matched {
    d9a_strings names;
    const d9a_hist **h[2];
    uint32_t cap;
} matched;

static int match_side(matched *m, const group_measure *g, const d9a_analysis *a, int side) {
    uint32_t n = g->count(a);
    for (uint32_t id = 0; id < n; id++) {
        const d9a_hist *h = g->hist(a, id);
        const char *name = g->name(a, id);
        if (!h || !name) continue;
        uint32_t k = d9a_strings_intern(&m->names, name, strlen(name));
        if (k == UINT32_MAX) return -1;
        if (k >= m->cap) {
            uint32_t cap = m->cap ? m->cap * 2 : 64;
            while (cap <= k) cap *= 2;
            for (int s = 0; s < 2; s++) {
                const d9a_hist **p = realloc(m->h[s], cap * sizeof *p);
                if (!p) return -1;
                memset(p + m->cap, 0, (cap - m->cap) * sizeof *p);
                m->h[s] = p;
            }
            m->cap = cap;
        }
        m->h[side][k] = h;
    }
    return 0;
}

int d9d_add_groups(d9d_diff *d, const d9a_analysis *a, const d9a_analysis *b) {
    for (size_t t = 0; t < sizeof table / sizeof table[0]; t++) {
        matched m = {0};
        int rc = match_side(&m, &table[t], a, 0) || match_side(&m, &table[t], b, 1) ? -1 : 0;
        for (uint32_t k = 0; rc == 0 && k < m.names.count; k++)
            rc = d9d_add(d, table[t].kind, d9a_strings_get(&m.names, k), table[t].measure, m.h[0][k], m.h[1][k]);
        d9a_strings_free(&m.names);
        free(m.h[0]);
        free(m.h[1]);
        if (rc) return -1;
    }
    return 0;
}

/* The buckets [from, to) of h as a histogram of their own; its sum from the buckets' midpoints
 * (within 0.4 %), its min and max within h's. */
static int hist_part(d9a_hist *out, const d9a_hist *h, uint32_t from, uint32_t to) {
    *out = (d9a_hist){0};
    if (to > h->nbuckets) to = h->nbuckets;
    if (from >= to) return 0;
    out->buckets = calloc(to, sizeof *out->buckets);
    if (!out->buckets) return -1;
    out->nbuckets = to;
    bool any = false;
    for (uint32_t i = from; i < to; i++) {
        uint64_t c = h->buckets[i];
        if (!c) continue;
        out->buckets[i] = c;
        uint64_t low = d9a_hist_bucket_low(i), high = low + d9a_hist_bucket_width(i) - 1;
        uint64_t mid = low + d9a_hist_bucket_width(i) / 2;
        if (low < h->min) low = h->min;
        if (high > h->max) high = h->max;
        if (mid < low) mid = low;
        if (mid > high) mid = high;
        if (!any) out->min = low;
        out->max = high;
        any = true;
        out->count += c;
        out->sum += c * mid;
    }
    return 0;
}

int d9d_add_groups_slowest(d9d_diff *d, const d9a_analysis *a, double fraction) {
    const group_measure *g = &table[0]; /* the poll's duration: what "slowest" is about */
    d->slowest_fraction = fraction;
    uint64_t q = d9a_hist_quantile(&a->polls, 1 - fraction);
    uint32_t at = d9a_hist_bucket(q);
    d->slowest_threshold_ns = a->polls.count ? d9a_hist_bucket_low(at) : 0;
    if (a->polls.count && d->slowest_threshold_ns < a->polls.min) d->slowest_threshold_ns = a->polls.min;
    uint32_t n = g->count(a);
    for (uint32_t id = 0; id < n; id++) {
        const d9a_hist *h = g->hist(a, id);
        const char *name = g->name(a, id);
        if (!h || !name) continue;
        d9a_hist rest = {0}, slow = {0};
        int rc = hist_part(&rest, h, 0, at) || hist_part(&slow, h, at, h->nbuckets) ? -1 : 0;
        if (rc == 0) rc = d9d_add(d, g->kind, name, g->measure, rest.count ? &rest : NULL, slow.count ? &slow : NULL);
        d9a_hist_free(&rest);
        d9a_hist_free(&slow);
        if (rc) return -1;
    }
    return 0;
}
