/* Periods of partial coverage from CoverageEvent records (coverage.h). */
#include "analysis/coverage.h"

#include <stdlib.h>
#include <string.h>

enum { M_FULL, M_NO_STACKS, M_SAMPLED, M_PAUSED };
static const char *const mode_names[] = {"full", "no_stacks", "sampled", "paused"};

static int mode_of(const char *m, size_t n) {
    for (int i = 0; i < 4; i++)
        if (strlen(mode_names[i]) == n && memcmp(mode_names[i], m, n) == 0) return i;
    return M_PAUSED; /* an unknown mode of a newer writer: nothing is promised about it */
}

void d9a_coverage_add(d9a_coverage *c, uint64_t ts, const char *source, size_t source_len, const char *mode,
                      size_t mode_len, uint64_t one_in) {
    size_t s = 0;
    if (source_len >= sizeof c->names[0]) source_len = sizeof c->names[0] - 1;
    while (s < c->nnames && (strlen(c->names[s]) != source_len || memcmp(c->names[s], source, source_len) != 0)) s++;
    if (s == c->nnames) {
        if (c->nnames == D9A_COV_SOURCES) return;
        memcpy(c->names[s], source, source_len);
        c->names[s][source_len] = 0;
        c->nnames++;
    }
    if (c->nchanges == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        d9a_cov_change *p = realloc(c->changes, cap * sizeof *p);
        if (!p) {
            c->failed = true;
            return;
        }
        c->changes = p;
        c->cap = cap;
    }
    c->changes[c->nchanges++] = (d9a_cov_change){ts, (uint8_t)s, (uint8_t)mode_of(mode, mode_len),
                                                 one_in > UINT32_MAX ? UINT32_MAX : (uint32_t)one_in,
                                                 (uint32_t)c->nchanges};
}

static int by_source_time(const void *x, const void *y) {
    const d9a_cov_change *a = x, *b = y;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

int d9a_coverage_report(d9a_coverage *c, uint64_t from, uint64_t to, d9a_coverage_source **sources, size_t *nsources,
                        d9a_coverage_period **periods, size_t *nperiods) {
    *sources = NULL;
    *periods = NULL;
    *nsources = *nperiods = 0;
    if (c->failed) return -1;
    if (!c->nchanges) return 0;
    qsort(c->changes, c->nchanges, sizeof *c->changes, by_source_time);
    d9a_coverage_source *s = calloc(c->nnames, sizeof *s);
    d9a_coverage_period *p = calloc(c->nchanges, sizeof *p);
    if (!s || !p) {
        free(s);
        free(p);
        return -1;
    }
    size_t np = 0;
    for (size_t i = 0; i < c->nchanges; i++) {
        const d9a_cov_change *ch = &c->changes[i];
        d9a_coverage_source *x = &s[ch->src];
        x->name = c->names[ch->src];
        bool last = i + 1 == c->nchanges || c->changes[i + 1].src != ch->src;
        uint64_t end = last ? to : c->changes[i + 1].ts;
        if (i > 0 && c->changes[i - 1].src == ch->src &&
            (c->changes[i - 1].mode != ch->mode || c->changes[i - 1].one_in != ch->one_in))
            x->changes++;
        uint64_t a = ch->ts > from ? ch->ts : from, b = end < to ? end : to;
        if (b <= a) continue;
        uint64_t d = b - a;
        x->covered_ns += d;
        uint64_t *bucket[] = {&x->full_ns, &x->no_stacks_ns, &x->sampled_ns, &x->paused_ns};
        *bucket[ch->mode] += d;
        if (ch->mode == M_FULL) continue;
        x->partial = true;
        d9a_coverage_period *prev = np ? &p[np - 1] : NULL;
        if (prev && prev->source == x->name && prev->to_ns == a && !strcmp(prev->mode, mode_names[ch->mode]) &&
            prev->one_in == ch->one_in) {
            prev->to_ns = b; /* a segment's restatement continues the period */
            continue;
        }
        p[np++] = (d9a_coverage_period){x->name, mode_names[ch->mode], ch->one_in, a, b};
    }
    *sources = s;
    *nsources = c->nnames;
    *periods = p;
    *nperiods = np;
    return 0;
}

void d9a_coverage_free(d9a_coverage *c) {
    free(c->changes);
    memset(c, 0, sizeof *c);
}
