/* `dial9 diff --json` (diff_render.h; the schema is docs/diff.md's). */
#include "analysis/diff_render.h"
#include "common/json_writer.h"

static void ku(d9_json *j, const char *k, uint64_t v) {
    d9_json_key(j, k);
    d9_json_u64(j, v);
}
static void kf(d9_json *j, const char *k, double v) {
    d9_json_key(j, k);
    d9_json_f64(j, v);
}
static void ks(d9_json *j, const char *k, const char *v) {
    d9_json_key(j, k);
    d9_json_string(j, v);
}
static void kb(d9_json *j, const char *k, bool v) {
    d9_json_key(j, k);
    d9_json_bool(j, v);
}

static void side(d9_json *j, const char *key, const d9d_side *s) {
    d9_json_key(j, key);
    d9_json_object_begin(j);
    ks(j, "label", s->label);
    ku(j, "start_ns", s->start_ns);
    ku(j, "end_ns", s->end_ns);
    ku(j, "duration_ns", s->duration_ns);
    kb(j, "windowed", s->windowed);
    ku(j, "events", s->events);
    ku(j, "polls", s->polls);
    kb(j, "lost_data", s->lost_data);
    ku(j, "dropped", s->dropped);
    kb(j, "readable", s->readable);
    ku(j, "upload_lost_segments", s->upload_lost_segments);
    ku(j, "unmatched_polls", s->unmatched_polls);
    d9_json_key(j, "partial_sources");
    d9_json_array_begin(j);
    for (size_t i = 0; i < s->npartial; i++) d9_json_string(j, s->partial[i]);
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void values(d9_json *j, const char *key, const d9d_values *v) {
    d9_json_key(j, key);
    d9_json_object_begin(j);
    ku(j, "count", v->count);
    ku(j, "total_ns", v->total_ns);
    ku(j, "mean_ns", v->mean_ns);
    ku(j, "p50_ns", v->p50_ns);
    ku(j, "p99_ns", v->p99_ns);
    ku(j, "max_ns", v->max_ns);
    d9_json_object_end(j);
}

void d9d_print_json(FILE *out, const d9d_diff *d, const d9d_gate *g) {
    d9_json j;
    d9_json_init(&j, out, true);
    d9_json_object_begin(&j);
    ks(&j, "schema", "dial9.diff");
    ku(&j, "version", D9D_JSON_VERSION);
    ks(&j, "mode", d9d_mode_name(d->mode));
    if (d->mode == D9D_SLOWEST) {
        d9_json_key(&j, "slowest");
        d9_json_object_begin(&j);
        kf(&j, "fraction", d->slowest_fraction);
        ku(&j, "threshold_ns", d->slowest_threshold_ns);
        d9_json_object_end(&j);
    }
    d9_json_key(&j, "thresholds");
    d9_json_object_begin(&j);
    kf(&j, "relative_pct", d->opt.relative_pct);
    ku(&j, "absolute_ns", d->opt.abs_ns);
    ku(&j, "min_polls", d->opt.min_polls);
    ku(&j, "tail_min_polls", d->opt.tail_min_polls);
    kf(&j, "z", d->opt.z);
    d9_json_object_end(&j);
    d9_json_key(&j, "sides");
    d9_json_object_begin(&j);
    side(&j, "a", &d->side[0]);
    side(&j, "b", &d->side[1]);
    d9_json_object_end(&j);
    d9_json_key(&j, "summary");
    d9_json_object_begin(&j);
    for (int v = 0; v < D9D_VERDICTS; v++) ku(&j, d9d_verdict_name((d9d_verdict)v), d->verdict_counts[v]);
    d9_json_object_end(&j);
    d9_json_key(&j, "groups");
    d9_json_array_begin(&j);
    for (size_t i = 0; i < d->nrows; i++) {
        const d9d_row *r = &d->rows[i];
        d9_json_object_begin(&j);
        ku(&j, "rank", i + 1);
        ks(&j, "kind", r->kind);
        ks(&j, "name", r->name);
        ks(&j, "measure", r->measure);
        ks(&j, "verdict", d9d_verdict_name(r->verdict));
        ks(&j, "reason", r->reason);
        ku(&j, "impact_ns", r->impact_ns);
        values(&j, "a", &r->a);
        values(&j, "b", &r->b);
        if (d->mode == D9D_SLOWEST) {
            kf(&j, "z_share", r->z_share);
        } else {
            kf(&j, "z_center", r->z_center);
            kf(&j, "z_tail", r->z_tail);
            kf(&j, "superiority", r->superiority);
        }
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    if (g && g->f) {
        d9_json_key(&j, "fail_on");
        d9_json_array_begin(&j);
        for (size_t i = 0; i < g->f->n; i++) {
            d9_json_object_begin(&j);
            ks(&j, "item", g->f->items[i].text);
            kb(&j, "ok", !g->broken[i]);
            ks(&j, "reason", g->why[i]);
            d9_json_object_end(&j);
        }
        d9_json_array_end(&j);
    }
    /* the exit status's verdict: every --fail-on item holds and every file was read */
    kb(&j, "ok", (!g || g->nbroken == 0) && d->side[0].readable && d->side[1].readable);
    d9_json_object_end(&j);
    fputc('\n', out);
}
