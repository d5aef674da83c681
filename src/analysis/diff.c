/* The judging and ranking of `dial9 diff` (diff.h; the rules are documented in docs/diff.md). */
#include "analysis/diff.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff_stats.h"
#include "analysis/time_arg.h"

void d9d_options_init(d9d_options *o) {
    /* 10 % and 20 us: a change smaller than either is not worth a line (a poll budget is
     * 10-100 us); z 3.29: two-sided p < 0.001, so that among the few dozen groups of a program
     * a false alarm is rare (Bonferroni: 50 groups at 5 % would ask 0.001); 1000 polls a side
     * before the p99 is judged: below that it rests on fewer than 10 polls, and a few polls
     * preempted on a busy host move it (two recordings of one build, 300 polls a side, differed
     * at tail z 5.2, p99 13.5 -> 34.9 us) */
    *o = (d9d_options){.relative_pct = 10, .abs_ns = 20000, .min_polls = 20, .tail_min_polls = 1000, .z = 3.29};
}

const char *d9d_verdict_name(d9d_verdict v) {
    static const char *const names[D9D_VERDICTS] = {"regression", "new",      "improvement", "gone",
                                                    "missing_data", "too_few", "unchanged"};
    return v < D9D_VERDICTS ? names[v] : "?";
}

d9d_diff *d9d_new(d9d_mode mode, const d9d_options *opt) {
    d9d_diff *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->mode = mode;
    if (opt) d->opt = *opt;
    else d9d_options_init(&d->opt);
    return d;
}

static int copy_hist(d9a_hist *dst, const d9a_hist *src) {
    *dst = (d9a_hist){0};
    if (!src) return 0;
    *dst = *src;
    dst->buckets = NULL;
    if (src->nbuckets) {
        dst->buckets = malloc((size_t)src->nbuckets * sizeof *dst->buckets);
        if (!dst->buckets) return -1;
        memcpy(dst->buckets, src->buckets, (size_t)src->nbuckets * sizeof *dst->buckets);
    }
    return 0;
}

int d9d_add(d9d_diff *d, const char *kind, const char *name, const char *measure, const d9a_hist *a,
            const d9a_hist *b) {
    if (d->failed) return -1;
    if (d->nrows == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 32;
        d9d_row *rows = realloc(d->rows, cap * sizeof *rows);
        if (rows) d->rows = rows;
        d9a_hist *h = rows ? realloc(d->hists, cap * 2 * sizeof *h) : NULL;
        if (!rows || !h) {
            d->failed = true;
            return -1;
        }
        d->hists = h;
        d->cap = cap;
    }
    d9d_row *r = &d->rows[d->nrows];
    *r = (d9d_row){.kind = kind, .measure = measure, .superiority = 0.5};
    r->name = strdup(name ? name : "<unknown>");
    d9a_hist *h = &d->hists[2 * d->nrows];
    h[0] = h[1] = (d9a_hist){0};
    if (!r->name || copy_hist(&h[0], a) != 0 || copy_hist(&h[1], b) != 0) {
        free((void *)r->name);
        d9a_hist_free(&h[0]);
        d9a_hist_free(&h[1]);
        d->failed = true;
        return -1;
    }
    d->nrows++;
    return 0;
}

static void values_of(d9d_values *v, const d9a_hist *h) {
    v->count = h->count;
    v->total_ns = h->sum;
    v->mean_ns = h->count ? h->sum / h->count : 0;
    v->p50_ns = d9a_hist_quantile(h, 0.50);
    v->p99_ns = d9a_hist_quantile(h, 0.99);
    v->max_ns = h->max;
}

/* Whether a moved to b by at least the thresholds, in direction dir (+1 up, -1 down). */
static bool moved(const d9d_options *o, uint64_t a, uint64_t b, int dir) {
    uint64_t delta = dir > 0 ? (b > a ? b - a : 0) : (a > b ? a - b : 0);
    double rel = o->relative_pct / 100 * (double)a;
    return delta >= o->abs_ns && (double)delta >= rel;
}

static uint64_t absdiff(uint64_t x, uint64_t y) { return x > y ? x - y : y - x; }

static const char *fmt(char *buf, uint64_t ns) { return d9a_format_ns(buf, 32, ns); }

/* A group on one side only: too few to judge, absent from a side that lost data (proves
 * nothing), or new (only in B) / gone (only in A). */
static void judge_one_sided(const d9d_diff *d, d9d_row *r, const d9d_values *v, char here, const d9d_side *other,
                            char there, d9d_verdict verdict) {
    char x[32];
    if (v->count < d->opt.min_polls) {
        r->verdict = D9D_TOO_FEW;
        snprintf(r->reason, sizeof r->reason, "only in %c, %" PRIu64 " polls (< %" PRIu64 ")", here, v->count,
                 d->opt.min_polls);
    } else if (other->lost_data) {
        r->verdict = D9D_MISSING_DATA;
        snprintf(r->reason, sizeof r->reason, "only in %c, but %c lost data: its absence from %c proves nothing", here,
                 there, there);
    } else {
        r->verdict = verdict;
        if (verdict == D9D_NEW)
            snprintf(r->reason, sizeof r->reason, "only in %c: %" PRIu64 " polls, %s in all", here, v->count,
                     fmt(x, v->total_ns));
        else
            snprintf(r->reason, sizeof r->reason, "only in %c: %" PRIu64 " polls", here, v->count);
    }
    r->impact_ns = v->total_ns;
}

/* Two runs or two windows: the durations of B against A. */
static void judge_durations(const d9d_diff *d, d9d_row *r, const d9a_hist *ha, const d9a_hist *hb) {
    const d9d_options *o = &d->opt;
    const d9d_values *a = &r->a, *b = &r->b;
    char x[32], y[32];
    if (a->count == 0) {
        judge_one_sided(d, r, b, 'B', &d->side[0], 'A', D9D_NEW);
        return;
    }
    if (b->count == 0) {
        judge_one_sided(d, r, a, 'A', &d->side[1], 'B', D9D_GONE);
        return;
    }
    r->z_center = d9d_mann_whitney_z(ha, hb, &r->superiority);
    r->z_tail = d9d_tail_z(ha, hb, 0.99);
    /* what B's polls cost beyond (or below) A's rate: B's count times the mean's change */
    if (__builtin_mul_overflow(b->count, absdiff(a->mean_ns, b->mean_ns), &r->impact_ns)) r->impact_ns = UINT64_MAX;
    if (a->count < o->min_polls || b->count < o->min_polls) {
        r->verdict = D9D_TOO_FEW;
        snprintf(r->reason, sizeof r->reason, "%" PRIu64 " and %" PRIu64 " polls: fewer than %" PRIu64 " on a side",
                 a->count, b->count, o->min_polls);
        return;
    }
    bool center_up = r->z_center >= o->z && moved(o, a->p50_ns, b->p50_ns, +1);
    bool center_down = r->z_center <= -o->z && moved(o, a->p50_ns, b->p50_ns, -1);
    bool tail_judged = a->count >= o->tail_min_polls && b->count >= o->tail_min_polls;
    bool tail_up = tail_judged && r->z_tail >= o->z && moved(o, a->p99_ns, b->p99_ns, +1);
    bool tail_down = tail_judged && r->z_tail <= -o->z && moved(o, a->p99_ns, b->p99_ns, -1);
    if (center_up || tail_up) {
        r->verdict = D9D_REGRESSION;
        if (center_up)
            snprintf(r->reason, sizeof r->reason, "p50 %s -> %s (Mann-Whitney z %.1f)", fmt(x, a->p50_ns),
                     fmt(y, b->p50_ns), r->z_center);
        else
            snprintf(r->reason, sizeof r->reason, "p99 %s -> %s (tail z %.1f)", fmt(x, a->p99_ns), fmt(y, b->p99_ns),
                     r->z_tail);
    } else if (center_down || tail_down) {
        r->verdict = D9D_IMPROVEMENT;
        if (center_down)
            snprintf(r->reason, sizeof r->reason, "p50 %s -> %s (Mann-Whitney z %.1f)", fmt(x, a->p50_ns),
                     fmt(y, b->p50_ns), r->z_center);
        else
            snprintf(r->reason, sizeof r->reason, "p99 %s -> %s (tail z %.1f)", fmt(x, a->p99_ns), fmt(y, b->p99_ns),
                     r->z_tail);
    } else {
        r->verdict = D9D_UNCHANGED;
        snprintf(r->reason, sizeof r->reason, "no change past the thresholds (z %.1f, tail z %.1f)", r->z_center,
                 r->z_tail);
    }
}

/* --slowest: B holds every group's slowest polls, so within a group B is slower by
 * construction; what tells is how much of B a group makes up against its share of A. */
static void judge_shares(const d9d_diff *d, d9d_row *r) {
    const d9d_options *o = &d->opt;
    const d9d_values *a = &r->a, *b = &r->b;
    uint64_t na = d->totals[0], nb = d->totals[1];
    r->impact_ns = b->total_ns; /* its time among the slowest polls */
    r->z_share = d9d_proportion_z(a->count, na, b->count, nb);
    double sa = na ? (double)a->count / (double)na : 0, sb = nb ? (double)b->count / (double)nb : 0;
    if (a->count + b->count < o->min_polls) {
        r->verdict = D9D_TOO_FEW;
        snprintf(r->reason, sizeof r->reason, "%" PRIu64 " polls (< %" PRIu64 ")", a->count + b->count, o->min_polls);
    } else if (a->count == 0) {
        r->verdict = D9D_NEW;
        snprintf(r->reason, sizeof r->reason, "every one of its %" PRIu64 " polls is among the slowest", b->count);
    } else if (r->z_share >= o->z && sb >= sa * (1 + o->relative_pct / 100)) {
        r->verdict = D9D_REGRESSION;
        snprintf(r->reason, sizeof r->reason, "%.1f %% of the slowest polls, %.1f %% of the rest (z %.1f)", 100 * sb,
                 100 * sa, r->z_share);
    } else if (r->z_share <= -o->z && sb * (1 + o->relative_pct / 100) <= sa) {
        r->verdict = D9D_IMPROVEMENT;
        snprintf(r->reason, sizeof r->reason, "%.1f %% of the slowest polls, %.1f %% of the rest (z %.1f)", 100 * sb,
                 100 * sa, r->z_share);
    } else {
        r->verdict = D9D_UNCHANGED;
        snprintf(r->reason, sizeof r->reason, "%.1f %% of the slowest polls, %.1f %% of the rest (z %.1f)", 100 * sb,
                 100 * sa, r->z_share);
    }
}

static int cmp_rows(const void *x, const void *y) {
    const d9d_row *a = x, *b = y;
    if (a->verdict != b->verdict) return a->verdict < b->verdict ? -1 : 1;
    if (a->impact_ns != b->impact_ns) return a->impact_ns > b->impact_ns ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c) return c;
    c = strcmp(a->kind, b->kind);
    return c ? c : strcmp(a->measure, b->measure);
}

void d9d_finish(d9d_diff *d) {
    d->totals[0] = d->totals[1] = 0;
    const char *first_measure = d->nrows ? d->rows[0].measure : NULL;
    for (size_t i = 0; i < d->nrows; i++) {
        values_of(&d->rows[i].a, &d->hists[2 * i]);
        values_of(&d->rows[i].b, &d->hists[2 * i + 1]);
        if (!strcmp(d->rows[i].measure, first_measure)) {
            d->totals[0] += d->rows[i].a.count;
            d->totals[1] += d->rows[i].b.count;
        }
    }
    if (d->mode == D9D_SLOWEST) /* both sides are one analysis: each holds its share of polls */
        for (int s = 0; s < 2; s++) d->side[s].polls = d->totals[s];
    for (size_t i = 0; i < d->nrows; i++) {
        if (d->mode == D9D_SLOWEST) judge_shares(d, &d->rows[i]);
        else judge_durations(d, &d->rows[i], &d->hists[2 * i], &d->hists[2 * i + 1]);
    }
    /* rows move: their histograms are done with, free them first */
    for (size_t i = 0; i < 2 * d->nrows; i++) d9a_hist_free(&d->hists[i]);
    if (d->nrows) qsort(d->rows, d->nrows, sizeof *d->rows, cmp_rows); /* rows is NULL with none */
    memset(d->verdict_counts, 0, sizeof d->verdict_counts);
    for (size_t i = 0; i < d->nrows; i++) d->verdict_counts[d->rows[i].verdict]++;
}

void d9d_free(d9d_diff *d) {
    if (!d) return;
    for (size_t i = 0; i < d->nrows; i++) free((void *)d->rows[i].name);
    if (d->hists)
        for (size_t i = 0; i < 2 * d->nrows; i++) d9a_hist_free(&d->hists[i]);
    free(d->rows);
    free(d->hists);
    free(d);
}
