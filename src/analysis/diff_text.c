/* `dial9 diff`'s text (diff_render.h). */
#include <inttypes.h>
#include <string.h>

#include "analysis/diff_heap.h"
#include "analysis/diff_render.h"
#include "analysis/time_arg.h"

const char *d9d_mode_name(d9d_mode m) {
    return m == D9D_RUNS ? "runs" : m == D9D_WINDOWS ? "windows" : "slowest";
}

static const char *ns(char *buf, uint64_t v) { return d9a_format_ns(buf, 32, v); }

static void print_side(FILE *out, char name, const d9d_side *s) {
    char x[32], y[32], z[32];
    fprintf(out, "  %c  %s\n     %s .. %s (%s), %" PRIu64 " polls, %" PRIu64 " events read", name, s->label,
            ns(x, s->start_ns), ns(y, s->end_ns), ns(z, s->duration_ns), s->polls, s->events);
    if (!s->lost_data) fprintf(out, ", nothing lost\n");
    else {
        fprintf(out, ", LOST DATA:");
        const char *sep = " ";
        if (s->dropped) fprintf(out, "%s%" PRIu64 " events dropped", sep, s->dropped), sep = ", ";
        if (!s->readable) fprintf(out, "%sa file could not be read to its end", sep), sep = ", ";
        if (s->upload_lost_segments)
            fprintf(out, "%s%" PRIu64 " segments deleted before upload", sep, s->upload_lost_segments);
        fprintf(out, "\n");
    }
    if (s->unmatched_polls) fprintf(out, "     %" PRIu64 " poll starts or ends without their pair (not measured)\n", s->unmatched_polls);
    if (s->npartial) {
        fprintf(out, "     recorded partially (cost governor):");
        for (size_t i = 0; i < s->npartial; i++) fprintf(out, " %s", s->partial[i]);
        fprintf(out, "\n");
    }
}

void d9d_print_text(FILE *out, const d9d_diff *d, size_t top, const d9d_gate *g) {
    char x[32], y[32], z[32], w[32], u[32], v[32];
    fprintf(out, "dial9 diff: ");
    if (d->mode == D9D_RUNS) fprintf(out, "two runs, B against A\n");
    else if (d->mode == D9D_WINDOWS) fprintf(out, "two windows, B against A\n");
    else
        fprintf(out, "B = the slowest %g %% of polls (from %s), A = the rest\n", d->slowest_fraction * 100,
                ns(x, d->slowest_threshold_ns));
    print_side(out, 'A', &d->side[0]);
    print_side(out, 'B', &d->side[1]);
    if (d->mode == D9D_SLOWEST)
        fprintf(out, "  a change: a group's share of B against its share of A, z >= %.2f and >= %g %%; >= %" PRIu64
                     " polls\n",
                d->opt.z, d->opt.relative_pct, d->opt.min_polls);
    else
        fprintf(out, "  a change: p50 (Mann-Whitney) or p99 (tail) with |z| >= %.2f, moved >= %g %% and >= %s; >= %" PRIu64
                     " polls a side (>= %" PRIu64 " for the p99)\n",
                d->opt.z, d->opt.relative_pct, ns(x, d->opt.abs_ns), d->opt.min_polls, d->opt.tail_min_polls);
    fprintf(out, "\n%zu regression%s, %zu new, %zu improvement%s, %zu gone, %zu missing data, %zu too few, %zu unchanged\n",
            d->verdict_counts[D9D_REGRESSION], d->verdict_counts[D9D_REGRESSION] == 1 ? "" : "s",
            d->verdict_counts[D9D_NEW], d->verdict_counts[D9D_IMPROVEMENT],
            d->verdict_counts[D9D_IMPROVEMENT] == 1 ? "" : "s", d->verdict_counts[D9D_GONE],
            d->verdict_counts[D9D_MISSING_DATA], d->verdict_counts[D9D_TOO_FEW], d->verdict_counts[D9D_UNCHANGED]);
    if (d->nrows) {
        fprintf(out, "\n%-12s %8s %8s %10s %10s %10s %10s %10s %10s  %s\n", "verdict", "polls A", "polls B", "p50 A",
                "p50 B", "p99 A", "p99 B", "mean A", "mean B", "group");
        size_t n = top && top < d->nrows ? top : d->nrows;
        for (size_t i = 0; i < n; i++) {
            const d9d_row *r = &d->rows[i];
            fprintf(out, "%-12s %8" PRIu64 " %8" PRIu64 " %10s %10s %10s %10s %10s %10s  %s", d9d_verdict_name(r->verdict),
                    r->a.count, r->b.count, ns(x, r->a.p50_ns), ns(y, r->b.p50_ns), ns(z, r->a.p99_ns),
                    ns(w, r->b.p99_ns), ns(u, r->a.mean_ns), ns(v, r->b.mean_ns), r->name);
            if (strcmp(r->measure, "poll_ns")) fprintf(out, " [%s]", r->measure);
            fprintf(out, "\n%-12s %s\n", "", r->reason);
        }
        if (n < d->nrows) fprintf(out, "... %zu more (--top 0 for all)\n", d->nrows - n);
    }
    if (d->heap) d9d_heap_print_text(out, d->heap, top);
    if (g && g->f) {
        fprintf(out, "\n");
        for (size_t i = 0; i < g->f->n; i++)
            fprintf(out, "%-4s fail-on %s: %s\n", g->broken[i] ? "FAIL" : "ok", g->f->items[i].text, g->why[i]);
        if (g->nbroken) fprintf(out, "dial9 diff: FAILED: %zu of %zu --fail-on item%s broken\n", g->nbroken, g->f->n, g->f->n == 1 ? "" : "s");
        else fprintf(out, "dial9 diff: ok: %zu --fail-on item%s hold\n", g->f->n, g->f->n == 1 ? "" : "s");
    }
}
