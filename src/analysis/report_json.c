/* The analysis report as JSON: `dial9 analyze --json`, whose schema is public (docs/analyze.md),
 * so it lives next to the analysis that fills it. */
#include "analysis/report_json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report_time.h"
#include "common/json_writer.h"

/* ------------------------------------------------------------------------------------------
 * JSON (docs/analyze.md)
 * ---------------------------------------------------------------------------------------- */

typedef struct jctx {
    d9_json j;
    const d9a_report *r;
    const d9a_options *opt;
    const d9a_input_file *files;
    size_t nfiles;
    const d9a_stack_view **stacks; /* referenced stacks, written once at the end */
    size_t nstacks, cap;
} jctx;

static void jkey_rel(jctx *c, const char *k, uint64_t ts) {
    char key[64];
    d9_json_key_u64(&c->j, k, ts);
    snprintf(key, sizeof key, "%s_rel_s", k);
    d9_json_key_f64(&c->j, key, d9a_rel_s(c->r, ts));
}

static void jstack_ref(jctx *c, const char *k, const d9a_stack_view *v) {
    d9_json_key(&c->j, k);
    if (!v) {
        d9_json_null(&c->j);
        return;
    }
    d9_json_u64(&c->j, v->id);
    for (size_t i = 0; i < c->nstacks; i++)
        if (c->stacks[i] == v) return;
    if (c->nstacks == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        const d9a_stack_view **p = realloc(c->stacks, cap * sizeof *p);
        if (!p) return;
        c->stacks = p;
        c->cap = cap;
    }
    c->stacks[c->nstacks++] = v;
}

static void jdist(d9_json *j, const char *k, const d9a_dist *d) {
    d9_json_key(j, k);
    d9_json_object_begin(j);
    d9_json_key_u64(j, "count", d->count);
    d9_json_key_u64(j, "total_ns", d->total);
    d9_json_key_u64(j, "min_ns", d->min);
    d9_json_key_u64(j, "p50_ns", d->p50);
    d9_json_key_u64(j, "p90_ns", d->p90);
    d9_json_key_u64(j, "p99_ns", d->p99);
    d9_json_key_u64(j, "max_ns", d->max);
    d9_json_object_end(j);
}

/* Where the time went (model/attribution.h): one <part>_ns field per part, adding up to the
 * elapsed time. */
static void jparts(d9_json *j, const char *k, const d9m_parts *p) {
    char key[40];
    d9_json_key(j, k);
    d9_json_object_begin(j);
    for (int i = 0; i < D9M_PARTS; i++) {
        snprintf(key, sizeof key, "%s_ns", d9m_part_names[i]);
        d9_json_key_u64(j, key, p->ns[i]);
    }
    d9_json_object_end(j);
}

static void jgroups(jctx *c, const char *k, const d9a_sample_group *g, size_t n, bool offcpu) {
    d9_json *j = &c->j;
    d9_json_key(j, k);
    d9_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        d9_json_object_begin(j);
        d9_json_key_string(j, "function", g[i].function);
        d9_json_key_u64(j, "samples", g[i].samples);
        d9_json_key_u64(j, "in_poll", g[i].in_poll);
        if (offcpu) d9_json_key_u64(j, "in_poll_est_ns", g[i].in_poll_ns);
        d9_json_key_u64(j, "parked", g[i].parked);
        d9_json_key_u64(j, "other", g[i].other);
        if (offcpu) {
            d9_json_key(j, "preempted");
            d9_json_bool(j, g[i].preempted);
        }
        d9_json_key_string(j, "app_frame", g[i].app_frame);
        d9_json_key_string(j, "syscall", g[i].syscall);
        d9_json_key_string(j, "example_location", g[i].example_location);
        jstack_ref(c, "stack", g[i].stack);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
}

static void json_summary(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    char w[64];
    d9_json_key(j, "summary");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "start_ns", r->start_ns);
    d9_json_key_u64(j, "end_ns", r->end_ns);
    d9_json_key_u64(j, "duration_ns", r->duration_ns);
    d9_json_key_string(j, "start_wall", d9a_wall_time(r, r->start_ns, w, sizeof w) ? w : NULL);
    d9_json_key_u64(j, "trace_first_ns", r->trace_first_ns);
    d9_json_key_u64(j, "trace_last_ns", r->trace_last_ns);
    d9_json_key(j, "windowed");
    d9_json_bool(j, r->windowed);
    d9_json_key_u64(j, "events", r->events);
    d9_json_key(j, "counts");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "poll_starts", r->counts.poll_starts);
    d9_json_key_u64(j, "poll_ends", r->counts.poll_ends);
    d9_json_key_u64(j, "parks", r->counts.parks);
    d9_json_key_u64(j, "unparks", r->counts.unparks);
    d9_json_key_u64(j, "wakes", r->counts.wakes);
    d9_json_key_u64(j, "spawns", r->counts.spawns);
    d9_json_key_u64(j, "terminates", r->counts.terminates);
    d9_json_key_u64(j, "cpu_samples", r->counts.cpu_samples);
    d9_json_key_u64(j, "offcpu_samples", r->counts.offcpu_samples);
    d9_json_key_u64(j, "sched_switches", r->counts.sched_switches);
    d9_json_key_u64(j, "task_dumps", r->counts.task_dumps);
    d9_json_key_u64(j, "queue_samples", r->counts.queue_samples);
    d9_json_key_u64(j, "symbols", r->counts.symbols);
    d9_json_key_u64(j, "drop_events", r->counts.drop_events);
    d9_json_key_u64(j, "worker_registrations", r->counts.worker_registrations);
    d9_json_key_u64(j, "memory_maps", r->counts.memory_maps);
    d9_json_key_u64(j, "other", r->counts.other);
    d9_json_object_end(j);
    d9_json_key(j, "workers");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nworkers; i++) d9_json_u64(j, r->workers[i].id);
    d9_json_array_end(j);
    d9_json_key(j, "dropped");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "total", r->dropped);
    d9_json_key(j, "by_reason");
    d9_json_object_begin(j);
    for (size_t i = 0; i < r->ndrops; i++) d9_json_key_u64(j, r->drops_by_reason[i].name, r->drops_by_reason[i].count);
    d9_json_object_end(j);
    d9_json_object_end(j);
    d9_json_key(j, "sources");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nsources; i++) {
        const d9a_source *s = &r->sources[i];
        d9_json_object_begin(j);
        d9_json_key_string(j, "name", s->name);
        d9_json_key(j, "active");
        d9_json_bool(j, s->active);
        d9_json_key_u64(j, "events", s->events);
        d9_json_key_string(j, "declared", s->declared);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    if (r->upload_lost.segments) { /* UploadLossEvent: only when there is one */
        d9_json_key(j, "upload_loss");
        d9_json_object_begin(j);
        d9_json_key_u64(j, "segments", r->upload_lost.segments);
        d9_json_key_u64(j, "bytes", r->upload_lost.bytes);
        d9_json_key_u64(j, "first_start_unix_ns", r->upload_lost.first_start_unix_ns);
        d9_json_key_u64(j, "last_end_unix_ns", r->upload_lost.last_end_unix_ns);
        d9_json_object_end(j);
    }
    d9a_poll_cpu_cover_json(&r->poll_cpu, j); /* "poll_cpu": long polls' off-CPU time, accounted */
    d9_json_key(j, "coverage"); /* governed sources (CoverageEvent): [] when none */
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->ncoverage; i++) {
        const d9a_coverage_source *s = &r->coverage[i];
        d9_json_object_begin(j);
        d9_json_key_string(j, "source", s->name);
        d9_json_key(j, "partial");
        d9_json_bool(j, s->partial);
        d9_json_key_u64(j, "covered_ns", s->covered_ns);
        d9_json_key_u64(j, "full_ns", s->full_ns);
        d9_json_key_u64(j, "no_stacks_ns", s->no_stacks_ns);
        d9_json_key_u64(j, "sampled_ns", s->sampled_ns);
        d9_json_key_u64(j, "paused_ns", s->paused_ns);
        d9_json_key_u64(j, "changes", s->changes);
        d9_json_key(j, "partial_periods");
        d9_json_array_begin(j);
        for (size_t k = 0; k < r->ncoverage_periods; k++) {
            const d9a_coverage_period *p = &r->coverage_periods[k];
            if (strcmp(p->source, s->name) != 0) continue;
            d9_json_object_begin(j);
            d9_json_key_string(j, "mode", p->mode);
            d9_json_key_u64(j, "one_in", p->one_in);
            jkey_rel(c, "from_ns", p->from_ns);
            jkey_rel(c, "to_ns", p->to_ns);
            d9_json_object_end(j);
        }
        d9_json_array_end(j);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "metadata");
    d9_json_object_begin(j);
    for (size_t i = 0; i < r->nmetadata; i++) d9_json_key_string(j, r->metadata[i].key, r->metadata[i].value);
    d9_json_object_end(j);
    d9_json_key(j, "metadata_changed"); /* keys whose last value is not the first metadata's */
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nmetadata_changed; i++) {
        const d9a_kv_change *m = &r->metadata_changed[i];
        d9_json_object_begin(j);
        d9_json_key_string(j, "key", m->key);
        d9_json_key(j, "first");
        if (m->first) d9_json_string(j, m->first);
        else d9_json_null(j);
        d9_json_key_string(j, "last", m->last);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key_u64(j, "unmatched_poll_starts", r->unmatched_poll_starts);
    d9_json_key_u64(j, "unmatched_poll_ends", r->unmatched_poll_ends);
    d9_json_key_u64(j, "late_records", r->late_records);
    d9_json_key_u64(j, "unresolved_refs", r->unresolved_refs);
    d9_json_key(j, "symbols_present");
    d9_json_bool(j, r->symbols_present);
    d9_json_key(j, "files");
    d9_json_array_begin(j);
    for (size_t i = 0; i < c->nfiles; i++) {
        const d9a_input_file *f = &c->files[i];
        d9_json_object_begin(j);
        d9_json_key_string(j, "path", f->path);
        d9_json_key_string(j, "status", f->status);
        d9_json_key_string(j, "message", f->message);
        d9_json_key_u64(j, "events", f->events);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void json_flags(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    d9_json_key(j, "red_flags");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nflags; i++) {
        const d9a_flag *f = &r->flags[i];
        d9_json_object_begin(j);
        d9_json_key_string(j, "severity", d9a_severity_name(f->severity));
        d9_json_key_string(j, "code", f->code);
        d9_json_key_string(j, "title", f->title);
        d9_json_key_string(j, "evidence", f->evidence);
        d9_json_key_string(j, "hint", f->hint);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
}

static void json_workers(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    d9_json_key(j, "workers");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        d9_json_object_begin(j);
        d9_json_key_u64(j, "id", w->id);
        d9_json_key_string(j, "runtime", w->runtime);
        d9_json_key_u64(j, "tid", w->tid);
        d9_json_key_u64(j, "polls", w->polls);
        d9_json_key_u64(j, "poll_ns", w->poll_ns);
        d9_json_key_f64(j, "busy_pct", w->busy_pct);
        d9_json_key_u64(j, "parks", w->parks);
        d9_json_key_u64(j, "park_ns", w->park_ns);
        d9_json_key_f64(j, "parked_pct", w->parked_pct);
        d9_json_key_u64(j, "busy_periods", w->busy_periods);
        d9_json_key_u64(j, "busy_wall_ns", w->busy_wall_ns);
        d9_json_key_u64(j, "busy_cpu_ns", w->busy_cpu_ns);
        d9_json_key(j, "cpu_ratio");
        if (w->cpu_ratio >= 0) d9_json_f64(j, w->cpu_ratio);
        else d9_json_null(j);
        jdist(j, "sched_wait", &w->sched_wait);
        d9_json_key_u64(j, "cpu_samples_in_poll", w->cpu_samples_in_poll);
        d9_json_key_u64(j, "offcpu_samples_in_poll", w->offcpu_samples_in_poll);
        d9_json_key_u64(j, "offcpu_in_poll_ns", w->offcpu_in_poll_ns);
        d9_json_key_u64(j, "preempted_in_poll_ns", w->preempted_in_poll_ns);
        d9_json_key_u64(j, "offcpu_in_poll_est_ns", w->offcpu_in_poll_est_ns);
        d9_json_key_u64(j, "polls_with_queue", w->polls_with_queue);
        d9_json_key_u64(j, "polls_with_queue_while_parked", w->polls_with_queue_while_parked);
        d9_json_key_u64(j, "max_local_queue", w->max_local_queue);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
}

static void json_polls(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    char w[64];
    d9_json_key(j, "polls");
    d9_json_object_begin(j);
    jdist(j, "duration", &r->polls);
    d9_json_key_u64(j, "over_warn", r->polls_over_warn);
    d9_json_key_u64(j, "over_crit", r->polls_over_crit);
    d9_json_key_u64(j, "warn_ns", c->opt->long_poll_warn_ns);
    d9_json_key_u64(j, "crit_ns", c->opt->long_poll_crit_ns);
    jparts(j, "attribution", &r->parts);
    d9_json_key(j, "longest");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlong_polls; i++) {
        const d9a_long_poll *p = &r->long_polls[i];
        d9_json_object_begin(j);
        d9_json_key_u64(j, "duration_ns", p->duration_ns);
        jkey_rel(c, "start_ns", p->start_ns);
        d9_json_key_string(j, "start_wall", d9a_wall_time(r, p->start_ns, w, sizeof w) ? w : NULL);
        d9_json_key_u64(j, "worker", p->worker);
        d9_json_key_u64(j, "task", p->task);
        d9_json_key_string(j, "location", p->location);
        d9_json_key_u64(j, "local_queue", p->local_queue);
        d9_json_key_u64(j, "cpu_samples", p->cpu_samples);
        d9_json_key_u64(j, "offcpu_samples", p->offcpu_samples);
        d9_json_key_u64(j, "offcpu_ns", p->offcpu_ns);
        d9_json_key_u64(j, "preempted_ns", p->preempted_ns);
        jparts(j, "attribution", &p->parts);
        d9_json_key(j, "samples");
        d9_json_array_begin(j);
        for (size_t g = 0; g < p->ngroups; g++) {
            d9_json_object_begin(j);
            d9_json_key_string(j, "source", p->groups[g].source ? "offcpu" : "cpu");
            d9_json_key_u64(j, "count", p->groups[g].count);
            if (p->groups[g].source) d9_json_key_u64(j, "offcpu_est_ns", p->groups[g].est_ns);
            d9_json_key_string(j, "function", p->groups[g].stack ? p->groups[g].stack->function : NULL);
            d9_json_key_string(j, "app_frame", p->groups[g].stack ? p->groups[g].stack->app_frame : NULL);
            jstack_ref(c, "stack", p->groups[g].stack);
            d9_json_object_end(j);
        }
        d9_json_array_end(j);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "by_location");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlocations; i++) {
        const d9a_location_report *l = &r->locations[i];
        if (!l->polls.count) continue;
        d9_json_object_begin(j);
        d9_json_key_string(j, "location", l->location);
        jdist(j, "duration", &l->polls);
        d9_json_key_u64(j, "over_warn", l->polls_over_warn);
        jparts(j, "attribution", &l->parts);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void json_delays(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    d9_json_key(j, "sched_delays");
    d9_json_object_begin(j);
    jdist(j, "wait", &r->sched_wait);
    d9_json_key_u64(j, "over_warn", r->sched_over_warn);
    d9_json_key_u64(j, "over_crit", r->sched_over_crit);
    d9_json_key(j, "worst");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nsched_worst; i++) {
        d9_json_object_begin(j);
        d9_json_key_u64(j, "wait_ns", r->sched_worst[i].wait_ns);
        jkey_rel(c, "ts", r->sched_worst[i].ts);
        d9_json_key_u64(j, "worker", r->sched_worst[i].worker);
        d9_json_key_u64(j, "tid", r->sched_worst[i].tid);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);

    d9_json_key(j, "wake_delays");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "wakes", r->wakes);
    d9_json_key_u64(j, "woken_not_polled", r->wakes_unpolled);
    jdist(j, "delay", &r->wake_delay);
    d9_json_key_u64(j, "over_warn", r->wake_over_warn);
    d9_json_key_u64(j, "over_crit", r->wake_over_crit);
    d9_json_key(j, "worst");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nwake_worst; i++) {
        const d9a_wake_delay *w = &r->wake_worst[i];
        d9_json_object_begin(j);
        d9_json_key_u64(j, "delay_ns", w->delay_ns);
        jkey_rel(c, "wake_ns", w->wake_ns);
        jkey_rel(c, "poll_ns", w->poll_ns);
        d9_json_key_u64(j, "task", w->task);
        d9_json_key_u64(j, "worker", w->worker);
        d9_json_key_string(j, "location", w->location);
        d9_json_key_u64(j, "wakes", w->wakes);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void json_tasks(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    d9_json_key(j, "tasks");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "spawned", r->spawned);
    d9_json_key_u64(j, "terminated", r->terminated);
    d9_json_key_u64(j, "terminated_unknown", r->terminated_unknown);
    d9_json_key_u64(j, "live_at_end", r->live_at_end);
    d9_json_key_f64(j, "live_growth_per_s", r->live_growth_per_s);
    d9_json_key(j, "live_series");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlive_series; i++) {
        d9_json_object_begin(j);
        d9_json_key_u64(j, "t_ns", r->live_series[i].t_ns);
        d9_json_key(j, "live");
        d9_json_i64(j, r->live_series[i].live);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "by_location");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlocations; i++) {
        const d9a_location_report *l = &r->locations[i];
        if (!l->spawned && !l->terminated) continue;
        d9_json_object_begin(j);
        d9_json_key_string(j, "location", l->location);
        d9_json_key_u64(j, "spawned", l->spawned);
        d9_json_key_u64(j, "terminated", l->terminated);
        d9_json_key_u64(j, "live", l->live);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "migration");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "tasks_polled", r->tasks_polled);
    d9_json_key_u64(j, "tasks_migrated", r->tasks_migrated);
    d9_json_key_u64(j, "repeat_polls", r->migration_polls);
    d9_json_key_u64(j, "migrations", r->migrations);
    d9_json_key_f64(j, "migrations_per_s", r->migrations_per_s);
    d9_json_key(j, "top");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->ntop_migrating; i++) {
        const d9a_migrating_task *m = &r->top_migrating[i];
        d9_json_object_begin(j);
        d9_json_key_u64(j, "task", m->task);
        d9_json_key_u64(j, "hops", m->hops);
        d9_json_key_u64(j, "polls", m->polls);
        d9_json_key_string(j, "location", m->location);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
    d9_json_object_end(j);
}

static void json_samples(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    d9_json_key(j, "blocking");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "offcpu_samples", r->offcpu_total);
    d9_json_key_u64(j, "in_poll", r->offcpu_in_poll);
    d9_json_key_u64(j, "parked", r->offcpu_parked);
    d9_json_key_u64(j, "other", r->offcpu_other);
    d9_json_key_u64(j, "blocked_in_poll", r->blocked_in_poll);
    d9_json_key_u64(j, "blocked_in_poll_est_ns", r->blocked_in_poll_ns);
    jgroups(c, "by_function", r->blocking_functions, r->nblocking_functions, true);
    jgroups(c, "by_syscall", r->blocking_syscalls, r->nblocking_syscalls, true);
    jgroups(c, "by_stack", r->blocking_stacks, r->nblocking_stacks, true);
    d9_json_object_end(j);
    d9_json_key(j, "lock_contention");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlock_waits; i++) {
        const d9a_lock_wait *w = &r->lock_waits[i];
        d9_json_object_begin(j);
        d9_json_key_string(j, "app_frame", w->app_frame);
        d9_json_key_string(j, "lock_function", w->lock_function);
        d9_json_key_u64(j, "waits", w->samples);
        d9_json_key_u64(j, "total_est_ns", w->total_ns);
        d9_json_key_u64(j, "worst_est_ns", w->worst_ns);
        d9_json_key_string(j, "example_location", w->example_location);
        jstack_ref(c, "stack", w->stack);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "cpu");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "cpu_samples", r->cpu_total);
    d9_json_key_u64(j, "in_poll", r->cpu_in_poll);
    jgroups(c, "by_function", r->cpu_functions, r->ncpu_functions, false);
    jgroups(c, "by_stack", r->cpu_stacks, r->ncpu_stacks, false);
    d9_json_object_end(j);
}

static void json_queued(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    d9_json_key(j, "queued_while_idle");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "polls_with_queue", r->polls_with_queue);
    d9_json_key_u64(j, "polls_with_queue_while_parked", r->polls_with_queue_while_parked);
    d9_json_key_u64(j, "global_queue_nonzero", r->queue_samples_nonzero);
    d9_json_key_u64(j, "global_queue_nonzero_while_parked", r->queue_samples_nonzero_while_parked);
    d9_json_key(j, "examples");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nqueued_examples; i++) {
        const d9a_queued_example *q = &r->queued_examples[i];
        d9_json_object_begin(j);
        jkey_rel(c, "ts", q->ts);
        d9_json_key_u64(j, "worker", q->worker);
        d9_json_key_u64(j, "local_queue", q->local_queue);
        d9_json_key_u64(j, "parked_worker", q->parked_worker);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void jheap_sites(jctx *c, const char *k, const d9a_heap_site_report *s, size_t n) {
    d9_json *j = &c->j;
    d9_json_key(j, k);
    d9_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        d9_json_object_begin(j);
        jstack_ref(c, "stack", s[i].stack);
        d9_json_key_f64(j, "alloc_bytes", s[i].alloc_bytes);
        d9_json_key_f64(j, "alloc_blocks", s[i].alloc_count);
        d9_json_key_f64(j, "inuse_bytes", s[i].inuse_bytes);
        d9_json_key_f64(j, "inuse_blocks", s[i].inuse_count);
        d9_json_key_f64(j, "peak_inuse_bytes", s[i].peak_inuse_bytes);
        d9_json_key(j, "growth_bytes");
        if (c->r->heap.growth_known) d9_json_f64(j, s[i].growth_bytes);
        else d9_json_null(j);
        d9_json_key_u64(j, "samples", s[i].samples);
        d9_json_key_u64(j, "frees", s[i].frees);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
}

/* The sampled heap (docs/analyze.md, "Heap"): only when the trace has AllocEvents. */
static void json_heap(jctx *c) {
    const d9a_heap_report *h = &c->r->heap;
    if (!h->present) return;
    d9_json *j = &c->j;
    d9_json_key(j, "heap");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "sample_rate_bytes", h->rate);
    d9_json_key_u64(j, "samples", h->samples);
    d9_json_key_u64(j, "frees", h->frees);
    d9_json_key_u64(j, "frees_unmatched", h->frees_unmatched);
    d9_json_key_f64(j, "alloc_bytes", h->alloc_bytes);
    d9_json_key_f64(j, "inuse_bytes", h->inuse_bytes);
    jheap_sites(c, "leak_candidates", h->leaks, h->nleaks);
    jheap_sites(c, "by_inuse", h->by_inuse, h->nby_inuse);
    jheap_sites(c, "by_alloc", h->by_alloc, h->nby_alloc);
    d9_json_object_end(j);
}

static void json_stacks(jctx *c) {
    d9_json *j = &c->j;
    char hex[32];
    d9_json_key(j, "stacks");
    d9_json_object_begin(j);
    for (size_t i = 0; i < c->nstacks; i++) {
        const d9a_stack_view *v = c->stacks[i];
        char id[16];
        snprintf(id, sizeof id, "%u", v->id);
        d9_json_key(j, id);
        d9_json_object_begin(j);
        d9_json_key_string(j, "function", v->function);
        d9_json_key_string(j, "app_frame", v->app_frame);
        d9_json_key_string(j, "syscall", v->syscall);
        d9_json_key(j, "preempted");
        d9_json_bool(j, v->preempted);
        d9_json_key(j, "truncated"); /* the callers of the last frame were not recorded */
        d9_json_bool(j, v->truncated);
        d9_json_key(j, "frames");
        d9_json_array_begin(j);
        for (uint32_t k = 0; k < v->nframes; k++) {
            const d9a_frame *f = &v->frames[k];
            d9_json_object_begin(j);
            snprintf(hex, sizeof hex, "0x%" PRIx64, f->addr);
            d9_json_key_string(j, "addr", hex);
            d9_json_key_string(j, "symbol", f->symbol);
            d9_json_key_string(j, "file", f->file && f->file[0] ? f->file : NULL);
            d9_json_key(j, "line");
            if (f->file && f->file[0]) d9_json_u64(j, f->line);
            else d9_json_null(j);
            d9_json_key(j, "inlined");
            d9_json_bool(j, f->inlined);
            d9_json_key(j, "kernel");
            d9_json_bool(j, f->kernel);
            d9_json_key_string(j, "object", f->object);
            d9_json_object_end(j);
        }
        d9_json_array_end(j);
        d9_json_object_end(j);
    }
    d9_json_object_end(j);
}

/* Present when the trace has spans (docs/analyze.md). */
static void json_spans(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->r;
    if (!r->nspans && !r->span_stray_ends) return;
    d9_json_key(j, "spans");
    d9_json_object_begin(j);
    d9_json_key_u64(j, "stray_ends", r->span_stray_ends);
    d9_json_key_u64(j, "reopened", r->span_reopened);
    d9_json_key(j, "by_name");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nspans; i++) {
        const d9a_span_report *s = &r->spans[i];
        d9_json_object_begin(j);
        d9_json_key_string(j, "name", s->name);
        d9_json_key_u64(j, "count", s->count);
        d9_json_key_u64(j, "unended", s->unended);
        d9_json_key_u64(j, "cross_worker", s->cross_worker);
        jdist(j, "elapsed", &s->elapsed);
        d9_json_key(j, "parts_ns");
        d9_json_object_begin(j);
        d9_json_key_u64(j, "poll", s->poll_ns);
        d9_json_key_u64(j, "queued", s->queued_ns);
        d9_json_key_u64(j, "wait", s->wait_ns);
        d9_json_key_u64(j, "unknown", s->unknown_ns);
        d9_json_object_end(j);
        jparts(j, "poll_attribution", &s->poll_parts);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

void d9a_report_write_json(FILE *out, const d9a_report *r, const d9a_options *opt,
                           const d9a_input_file *files, size_t nfiles) {
    jctx c = {.r = r, .opt = opt, .files = files, .nfiles = nfiles};
    d9_json_init(&c.j, out, true);
    d9_json_object_begin(&c.j);
    d9_json_key_u64(&c.j, "version", 1);
    json_summary(&c);
    json_flags(&c);
    json_workers(&c);
    json_polls(&c);
    json_delays(&c);
    json_tasks(&c);
    json_samples(&c);
    json_queued(&c);
    json_spans(&c);
    json_heap(&c);
    json_stacks(&c);
    d9_json_object_end(&c.j);
    fputc('\n', out);
    free(c.stacks);
}
