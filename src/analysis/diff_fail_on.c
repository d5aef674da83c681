/* --fail-on (diff_fail_on.h). */
#include "analysis/diff_fail_on.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h> /* isfinite: a macro, no libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff_heap.h"
#include "analysis/time_arg.h"
#include "common/round.h"
#include "common/bytes_text.h"

static int parse_amount(const char *v, d9d_fail_item *it, char *err, size_t errlen) {
    const char *s = v;
    if (*s == '+') s++;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *s == '-' || errno || !isfinite(x) || x < 0 || x > 1e12) {
        snprintf(err, errlen, "'%s': wants an increase such as +20%% or +2ms", it->text);
        return -1;
    }
    if (!strcmp(end, "%")) {
        it->relative = true;
        it->percent = x;
        return 0;
    }
    if (it->kind == D9D_FAIL_HEAP_INUSE) {
        static const struct { const char *unit; double bytes; } sizes[] = {
            {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        };
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            if (!strcmp(end, sizes[i].unit)) {
                it->bytes = d9_round_u64(x * sizes[i].bytes);
                return 0;
            }
        snprintf(err, errlen, "'%s': '%s' needs a unit: %% (of A's value), B, KiB, MiB or GiB", it->text, v);
        return -1;
    }
    static const struct { const char *unit; double ns; } units[] = {
        {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            double ns = x * units[i].ns;
            if (ns > 1e18) {
                snprintf(err, errlen, "'%s': too large (at most 1e18 ns)", it->text);
                return -1;
            }
            it->ns = d9_round_u64(ns);
            return 0;
        }
    snprintf(err, errlen, "'%s': '%s' needs a unit: %% (of A's value), ns, us, ms or s", it->text, v);
    return -1;
}

int d9d_fail_on_parse(const char *spec, d9d_fail_on *out, char *err, size_t errlen) {
    *out = (d9d_fail_on){0};
    const char *p = spec;
    if (!*p) {
        snprintf(err, errlen, "--fail-on: empty (regression, new, data-loss, p50=+X, p99=+X, mean=+X, heap_inuse=+X)");
        return -1;
    }
    for (;;) {
        size_t len = strcspn(p, ",");
        if (out->n == D9D_FAIL_ITEMS) {
            snprintf(err, errlen, "--fail-on: more than %d items", D9D_FAIL_ITEMS);
            return -1;
        }
        d9d_fail_item *it = &out->items[out->n];
        if (len == 0 || len >= sizeof it->text) {
            snprintf(err, errlen, "--fail-on: '%s': %s item", spec, len ? "too long an" : "an empty");
            return -1;
        }
        memcpy(it->text, p, len);
        it->text[len] = 0;
        char *eq = strchr(it->text, '=');
        char key[48];
        snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - it->text) : (int)len, it->text);
        static const struct { const char *name; d9d_fail_kind kind; bool amount; } keys[] = {
            {"regression", D9D_FAIL_REGRESSION, false}, {"new", D9D_FAIL_NEW, false},
            {"data-loss", D9D_FAIL_DATA_LOSS, false},   {"p50", D9D_FAIL_P50, true},
            {"p99", D9D_FAIL_P99, true},                {"mean", D9D_FAIL_MEAN, true},
            {"heap_inuse", D9D_FAIL_HEAP_INUSE, true},
        };
        size_t k = 0;
        while (k < sizeof keys / sizeof keys[0] && strcmp(keys[k].name, key)) k++;
        if (k == sizeof keys / sizeof keys[0]) {
            snprintf(err, errlen, "--fail-on: '%s': unknown (regression, new, data-loss, p50=+X, p99=+X, mean=+X, heap_inuse=+X)", it->text);
            return -1;
        }
        it->kind = keys[k].kind;
        if (keys[k].amount != (eq != NULL)) {
            snprintf(err, errlen, "--fail-on: '%s': %s", it->text,
                     keys[k].amount ? "wants an increase: p99=+20% or p99=+2ms" : "takes no value");
            return -1;
        }
        if (eq) {
            char e2[200];
            if (parse_amount(eq + 1, it, e2, sizeof e2) != 0) {
                snprintf(err, errlen, "--fail-on: %s", e2);
                return -1;
            }
        }
        out->n++;
        p += len;
        if (!*p) break;
        p++;
    }
    return 0;
}

bool d9d_fail_item_needs_durations(const d9d_fail_item *it) {
    return it->kind == D9D_FAIL_P50 || it->kind == D9D_FAIL_P99 || it->kind == D9D_FAIL_MEAN;
}

bool d9d_fail_item_needs_runs(const d9d_fail_item *it) { return it->kind == D9D_FAIL_HEAP_INUSE; }

/* heap_inuse=+X: the first site, in rank order, that grew that much; no heap section breaks the
 * item (a gate on the heap that passes because profiling was off would hide the leak). */
static bool heap_grew(const d9d_diff *d, const d9d_fail_item *it, char *why, size_t len) {
    if (!d->heap) {
        snprintf(why, len, "no heap samples on both runs (DIAL9_MEMORY_PROFILE_ENABLED=1 records them)");
        return true;
    }
    const d9d_heap_row *r = d9d_heap_grown(d->heap, it->relative, it->percent, it->bytes);
    if (!r) return false;
    char x[32], y[32];
    const char *leaf = strrchr(r->site, ';');
    snprintf(why, len, "%.160s: in use %s -> %s", leaf ? leaf + 1 : r->site, d9_bytes_text(x, sizeof x, r->inuse_bytes[0]),
             d9_bytes_text(y, sizeof y, r->inuse_bytes[1]));
    return true;
}

/* Whether row r rose by the item's amount, with its test significant upwards. */
static bool rose(const d9d_diff *d, const d9d_fail_item *it, const d9d_row *r, uint64_t *from, uint64_t *to) {
    if (r->a.count < d->opt.min_polls || r->b.count < d->opt.min_polls) return false;
    double z = it->kind == D9D_FAIL_P99 ? r->z_tail : r->z_center;
    *from = it->kind == D9D_FAIL_P50 ? r->a.p50_ns : it->kind == D9D_FAIL_P99 ? r->a.p99_ns : r->a.mean_ns;
    *to = it->kind == D9D_FAIL_P50 ? r->b.p50_ns : it->kind == D9D_FAIL_P99 ? r->b.p99_ns : r->b.mean_ns;
    if (z < d->opt.z || *to <= *from) return false;
    uint64_t delta = *to - *from;
    return it->relative ? (double)delta * 100 >= it->percent * (double)*from && delta > 0 : delta >= it->ns;
}

size_t d9d_fail_on_check(const d9d_fail_on *f, const d9d_diff *d, bool broken[D9D_FAIL_ITEMS],
                         char why[D9D_FAIL_ITEMS][256]) {
    size_t nbroken = 0;
    for (size_t i = 0; i < f->n; i++) {
        const d9d_fail_item *it = &f->items[i];
        broken[i] = false;
        snprintf(why[i], 256, "none");
        switch (it->kind) {
        case D9D_FAIL_REGRESSION:
        case D9D_FAIL_NEW: {
            d9d_verdict v = it->kind == D9D_FAIL_NEW ? D9D_NEW : D9D_REGRESSION;
            for (size_t r = 0; r < d->nrows && !broken[i]; r++)
                if (d->rows[r].verdict == v) {
                    broken[i] = true;
                    snprintf(why[i], 256, "%zu %s, first %s: %s", d->verdict_counts[v],
                             d->verdict_counts[v] == 1 ? d9d_verdict_name(v) : v == D9D_NEW ? "new" : "regressions",
                             d->rows[r].name, d->rows[r].reason);
                }
            break;
        }
        case D9D_FAIL_DATA_LOSS:
            for (int s = 0; s < 2 && !broken[i]; s++)
                if (d->side[s].lost_data) {
                    broken[i] = true;
                    snprintf(why[i], 256, "side %c lost data: %" PRIu64 " events dropped%s%s", s ? 'B' : 'A',
                             d->side[s].dropped, d->side[s].readable ? "" : ", a file unreadable",
                             d->side[s].upload_lost_segments ? ", segments lost before upload" : "");
                }
            break;
        case D9D_FAIL_HEAP_INUSE: broken[i] = heap_grew(d, it, why[i], 256); break;
        default:
            for (size_t r = 0; r < d->nrows && !broken[i]; r++) {
                uint64_t from, to;
                if (!rose(d, it, &d->rows[r], &from, &to)) continue;
                char x[32], y[32];
                broken[i] = true;
                snprintf(why[i], 256, "%s: %s -> %s", d->rows[r].name, d9a_format_ns(x, sizeof x, from),
                         d9a_format_ns(y, sizeof y, to));
            }
            break;
        }
        nbroken += broken[i];
    }
    return nbroken;
}
