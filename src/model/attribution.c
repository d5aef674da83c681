/* Per-poll attribution: the arithmetic of one poll's parts and the trace's coverage of switch
 * records (attribution.h has the definition). */
#include "model/attribution.h"

#include <stdlib.h>
#include <string.h>

const char *const d9m_part_names[D9M_PARTS] = {"on_cpu", "lock",          "io",       "sleep",
                                               "fault",  "blocked_other", "runnable", "unknown",
                                               "off_cpu_uncaptured"};

void d9m_attr_gap(d9m_attr_poll *p, uint64_t from, uint64_t to) {
    if (from < p->start) from = p->start;
    if (to > p->end) to = p->end;
    if (to <= from) return;
    /* merge every gap that touches [from, to) into it, keep the others in order */
    uint32_t n = 0, at = 0;
    bool placed = false;
    typeof(p->gaps[0]) out[D9M_ATTR_GAPS + 1];
    for (uint32_t i = 0; i < p->ngaps; i++) {
        if (p->gaps[i].to < from) {
            out[n++] = p->gaps[i];
        } else if (p->gaps[i].from > to) {
            if (!placed) at = n++, placed = true;
            out[n++] = p->gaps[i];
        } else {
            if (p->gaps[i].from < from) from = p->gaps[i].from;
            if (p->gaps[i].to > to) to = p->gaps[i].to;
        }
    }
    if (!placed) at = n++;
    out[at].from = from;
    out[at].to = to;
    if (n > D9M_ATTR_GAPS) { /* too many: their hull, more unknown rather than a lost gap */
        out[0].to = out[n - 1].to;
        n = 1;
    }
    memcpy(p->gaps, out, n * sizeof out[0]);
    p->ngaps = n;
}

uint64_t d9m_attr_covered_gaps(const d9m_attr_poll *p, uint64_t from, uint64_t to) {
    if (from < p->start) from = p->start;
    if (to > p->end) to = p->end;
    if (to <= from) return 0;
    uint64_t d = to - from;
    for (uint32_t i = 0; i < p->ngaps; i++) {
        uint64_t a = p->gaps[i].from > from ? p->gaps[i].from : from;
        uint64_t b = p->gaps[i].to < to ? p->gaps[i].to : to;
        if (b > a) d -= b - a;
    }
    return d;
}

/* ---- coverage ---- */

static bool grow(void **arr, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 16;
    void *x = realloc(*arr, c * size);
    if (!x) return false;
    *arr = x;
    *cap = c;
    return true;
}

bool d9m_poll_cpu_metadata(const char *key, size_t key_len, const char *val, size_t val_len, bool *on,
                           uint64_t *min_ns) {
    static const char name[] = "poll_cpu", said_on[] = "on: polls over ";
    if (key_len != sizeof name - 1 || memcmp(key, name, key_len) != 0) return false;
    *on = false;
    *min_ns = 0;
    if (val_len < sizeof said_on - 1 || memcmp(val, said_on, sizeof said_on - 1) != 0) return true;
    uint64_t us = 0;
    size_t i = sizeof said_on - 1, digits = 0;
    for (; i < val_len && val[i] >= '0' && val[i] <= '9' && digits < 9; i++, digits++) us = us * 10 + (uint64_t)(val[i] - '0');
    if (!digits || !us) return true;
    *on = true;
    *min_ns = us * 1000;
    return true;
}

void d9m_coverage_metadata(d9m_coverage *c, const char *key, size_t key_len, const char *val,
                           size_t val_len) {
    static const char name[] = "source.off_cpu";
    if (d9m_poll_cpu_metadata(key, key_len, val, val_len, &c->poll_cpu_on, &c->poll_cpu_min_ns)) return;
    if (key_len != sizeof name - 1 || memcmp(key, name, key_len) != 0) return;
    c->stated = val_len >= 6 && !memcmp(val, "active", 6) ? D9M_SWITCH_ACTIVE : D9M_SWITCH_INACTIVE;
}

void d9m_coverage_change(d9m_coverage *c, uint64_t ts, const char *source, size_t source_len,
                         const char *mode, size_t mode_len) {
    if (source_len != 7 || memcmp(source, "off_cpu", 7) != 0) return;
    /* full and no_stacks record every switch; sampled, paused and modes of newer writers: not
     * known which switches are there */
    bool covered = (mode_len == 4 && !memcmp(mode, "full", 4)) ||
                   (mode_len == 9 && !memcmp(mode, "no_stacks", 9));
    if (!grow((void **)&c->changes, &c->changes_cap, c->nchanges, sizeof *c->changes)) {
        c->failed = true;
        return;
    }
    size_t i = c->nchanges++;
    while (i > 0 && c->changes[i - 1].ts > ts) { /* they come nearly in order: a short shift */
        c->changes[i] = c->changes[i - 1];
        i--;
    }
    c->changes[i] = (d9m_cov_change){ts, covered};
}

void d9m_coverage_drop(d9m_coverage *c, uint64_t ts, uint64_t worker, uint64_t tid) {
    if (worker == 255) { /* D9_WORKER_NONE: a thread that is no worker, or the process */
        if (tid != 0) return;
        worker = D9M_COV_ALL_WORKERS;
    }
    if (!grow((void **)&c->drops, &c->drops_cap, c->ndrops, sizeof *c->drops)) {
        c->failed = true;
        return;
    }
    size_t i = c->ndrops++;
    while (i > 0 && c->drops[i - 1].ts > ts) {
        c->drops[i] = c->drops[i - 1];
        i--;
    }
    c->drops[i] = (d9m_cov_drop){ts, worker};
}

/* The first index whose ts is > t (arrays sorted by ts). */
#define UPPER_BOUND(arr, n, t)                                                                  \
    ({                                                                                          \
        size_t lo_ = 0, hi_ = (n);                                                              \
        while (lo_ < hi_) {                                                                     \
            size_t mid_ = lo_ + (hi_ - lo_) / 2;                                                \
            if ((arr)[mid_].ts <= (t)) lo_ = mid_ + 1;                                          \
            else hi_ = mid_;                                                                    \
        }                                                                                       \
        lo_;                                                                                    \
    })

/* UPPER_BOUND from a hint: stepped on from it when everything before it is <= t (a caller's
 * polls in order of start), searched for otherwise. */
#define UPPER_BOUND_FROM(arr, n, t, hint)                                                       \
    ({                                                                                          \
        size_t h_ = (hint);                                                                     \
        if (h_ > (n) || (h_ > 0 && (arr)[h_ - 1].ts > (t))) {                                   \
            h_ = UPPER_BOUND(arr, n, t);                                                        \
        } else {                                                                                \
            while (h_ < (n) && (arr)[h_].ts <= (t)) h_++;                                       \
        }                                                                                       \
        h_;                                                                                     \
    })

void d9m_coverage_gaps_slow(const d9m_coverage *c, uint64_t worker, d9m_attr_poll *p, d9m_cov_cursor *cur) {
    if (c->failed || c->stated == D9M_SWITCH_INACTIVE ||
        (c->stated == D9M_SWITCH_UNSTATED && !c->switch_seen)) {
        d9m_attr_gap(p, p->start, p->end);
        return;
    }
    /* the governor's mode at the start (covered before its first record), then its changes */
    d9m_cov_cursor none = {SIZE_MAX, SIZE_MAX, 0, 0, false}; /* no caller's: both searched for */
    if (!cur) cur = &none;
    size_t i = cur->change = UPPER_BOUND_FROM(c->changes, c->nchanges, p->start, cur->change);
    bool covered = i == 0 || c->changes[i - 1].covered;
    uint64_t since = p->start;
    for (; i < c->nchanges && c->changes[i].ts < p->end; i++) {
        if (!covered) d9m_attr_gap(p, since, c->changes[i].ts);
        covered = c->changes[i].covered;
        since = c->changes[i].ts;
    }
    if (!covered) d9m_attr_gap(p, since, p->end);
    /* drops inside the poll (or at its end): the poll up to the last of them */
    uint64_t upto = 0;
    cur->drop = UPPER_BOUND_FROM(c->drops, c->ndrops, p->start - (p->start > 0), cur->drop);
    for (size_t k = cur->drop; k < c->ndrops && c->drops[k].ts <= p->end; k++)
        if (c->drops[k].worker == worker || c->drops[k].worker == D9M_COV_ALL_WORKERS)
            upto = c->drops[k].ts;
    if (upto > p->start) d9m_attr_gap(p, p->start, upto);
    /* the times a later poll finds these same bounds, with no change and no drop inside: from
     * the last of those before (a drop counts from the time after it: polls take drops at
     * their start) to the first after */
    size_t ci = cur->change, di = cur->drop;
    uint64_t from = ci > 0 ? c->changes[ci - 1].ts : 0, until = UINT64_MAX;
    if (di > 0 && c->drops[di - 1].ts >= from) from = c->drops[di - 1].ts + (c->drops[di - 1].ts < UINT64_MAX);
    if (ci < c->nchanges) until = c->changes[ci].ts;
    if (di < c->ndrops && c->drops[di].ts < until) until = c->drops[di].ts;
    cur->quiet_from = from;
    cur->quiet_until = until;
    cur->quiet_covered = ci == 0 || c->changes[ci - 1].covered;
}

void d9m_coverage_free(d9m_coverage *c) {
    free(c->changes);
    free(c->drops);
    memset(c, 0, sizeof *c);
}
