/* `dial9 diff --json` (diff_render.h; the schema is docs/diff.md's). */
#include "analysis/diff_heap.h"
#include "analysis/diff_render.h"
#include "common/json_writer.h"

static void side(d9_json *j, const char *key, const d9d_side *s) {
    d9_json_key(j, key);
    d9_json_object_begin(j);
    d9_json_key_string(j, "label", s->label);
    d9_json_key_u64(j, "start_ns", s->start_ns);
    d9_json_key_u64(j, "end_ns", s->end_ns);
    d9_json_key_u64(j, "duration_ns", s->duration_ns);
    d9_json_key_bool(j, "windowed", s->windowed);
    d9_json_key_u64(j, "events", s->events);
    d9_json_key_u64(j, "polls", s->polls);
    d9_json_key_bool(j, "lost_data", s->lost_data);
    d9_json_key_u64(j, "dropped", s->dropped);
    d9_json_key_bool(j, "readable", s->readable);
    d9_json_key_u64(j, "upload_lost_segments", s->upload_lost_segments);
    d9_json_key_u64(j, "unmatched_polls", s->unmatched_polls);
    d9_json_key(j, "partial_sources");
    d9_json_array_begin(j);
    for (size_t i = 0; i < s->npartial; i++) d9_json_string(j, s->partial[i]);
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void values(d9_json *j, const char *key, const d9d_values *v) {
    d9_json_key(j, key);
    d9_json_object_begin(j);
    d9_json_key_u64(j, "count", v->count);
    d9_json_key_u64(j, "total_ns", v->total_ns);
    d9_json_key_u64(j, "mean_ns", v->mean_ns);
    d9_json_key_u64(j, "p50_ns", v->p50_ns);
    d9_json_key_u64(j, "p99_ns", v->p99_ns);
    d9_json_key_u64(j, "max_ns", v->max_ns);
    d9_json_object_end(j);
}

void d9d_print_json(FILE *out, const d9d_diff *d, const d9d_gate *g) {
    d9_json j;
    d9_json_init(&j, out, true);
    d9_json_object_begin(&j);
    d9_json_key_string(&j, "schema", "dial9.diff");
    d9_json_key_u64(&j, "version", D9D_JSON_VERSION);
    d9_json_key_string(&j, "mode", d9d_mode_name(d->mode));
    if (d->mode == D9D_SLOWEST) {
        d9_json_key(&j, "slowest");
        d9_json_object_begin(&j);
        d9_json_key_f64(&j, "fraction", d->slowest_fraction);
        d9_json_key_u64(&j, "threshold_ns", d->slowest_threshold_ns);
        d9_json_object_end(&j);
    }
    d9_json_key(&j, "thresholds");
    d9_json_object_begin(&j);
    d9_json_key_f64(&j, "relative_pct", d->opt.relative_pct);
    d9_json_key_u64(&j, "absolute_ns", d->opt.abs_ns);
    d9_json_key_u64(&j, "min_polls", d->opt.min_polls);
    d9_json_key_u64(&j, "tail_min_polls", d->opt.tail_min_polls);
    d9_json_key_f64(&j, "z", d->opt.z);
    d9_json_object_end(&j);
    d9_json_key(&j, "sides");
    d9_json_object_begin(&j);
    side(&j, "a", &d->side[0]);
    side(&j, "b", &d->side[1]);
    d9_json_object_end(&j);
    d9_json_key(&j, "summary");
    d9_json_object_begin(&j);
    for (int v = 0; v < D9D_VERDICTS; v++) d9_json_key_u64(&j, d9d_verdict_name((d9d_verdict)v), d->verdict_counts[v]);
    d9_json_object_end(&j);
    d9_json_key(&j, "groups");
    d9_json_array_begin(&j);
    for (size_t i = 0; i < d->nrows; i++) {
        const d9d_row *r = &d->rows[i];
        d9_json_object_begin(&j);
        d9_json_key_u64(&j, "rank", i + 1);
        d9_json_key_string(&j, "kind", r->kind);
        d9_json_key_string(&j, "name", r->name);
        d9_json_key_string(&j, "measure", r->measure);
        d9_json_key_string(&j, "verdict", d9d_verdict_name(r->verdict));
        d9_json_key_string(&j, "reason", r->reason);
        d9_json_key_u64(&j, "impact_ns", r->impact_ns);
        values(&j, "a", &r->a);
        values(&j, "b", &r->b);
        if (d->mode == D9D_SLOWEST) {
            d9_json_key_f64(&j, "z_share", r->z_share);
        } else {
            d9_json_key_f64(&j, "z_center", r->z_center);
            d9_json_key_f64(&j, "z_tail", r->z_tail);
            d9_json_key_f64(&j, "superiority", r->superiority);
        }
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    if (d->heap) { /* two runs with heap samples (docs/diff.md, "Heap") */
        d9_json_key(&j, "heap");
        d9d_heap_print_json(&j, d->heap);
    }
    if (g && g->f) {
        d9_json_key(&j, "fail_on");
        d9_json_array_begin(&j);
        for (size_t i = 0; i < g->f->n; i++) {
            d9_json_object_begin(&j);
            d9_json_key_string(&j, "item", g->f->items[i].text);
            d9_json_key_bool(&j, "ok", !g->broken[i]);
            d9_json_key_string(&j, "reason", g->why[i]);
            d9_json_object_end(&j);
        }
        d9_json_array_end(&j);
    }
    /* the exit status's verdict: every --fail-on item holds and every file was read */
    d9_json_key_bool(&j, "ok", (!g || g->nbroken == 0) && d->side[0].readable && d->side[1].readable);
    d9_json_object_end(&j);
    fputc('\n', out);
}
