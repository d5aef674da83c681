/* `dial9 analyze` as text (docs/analyze.md shows it section by section). */
#include "cli/analyze_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/upload_loss.h"
#include "analysis/frame_class.h"
#include "analysis/report_time.h"
#include "cli/text_escape.h"
#include "common/bytes_text.h"

/* Where the text goes while d9_analyze_print_text runs (stdout, escaping the trace's control
 * characters: cli/text_escape.h). */
static FILE *text_out;

static const char *ns_str(char *buf, size_t len, uint64_t ns) { return d9a_format_ns(buf, len, ns); }

/* ------------------------------------------------------------------------------------------
 * Text
 * ---------------------------------------------------------------------------------------- */

#define NS(v) ns_str((char[32]){0}, 32, (v))

static void print_frame(const d9a_frame *f) {
    if (f->symbol) {
        fprintf(text_out, "%s", f->symbol);
        if (f->inlined) fprintf(text_out, " [inlined]");
        if (f->file && f->file[0]) fprintf(text_out, "  (%s:%u)", d9a_basename(f->file), f->line);
    } else {
        fprintf(text_out, "0x%" PRIx64, f->addr);
        if (f->object) fprintf(text_out, "  (%s+0x%" PRIx64 ")", d9a_basename(f->object), f->object_offset);
        else if (f->kernel) fprintf(text_out, "  (kernel)");
    }
}

/* Frames leaf first, at most --stack-depth. Off-CPU stacks start with the scheduler's own
 * frames (__schedule, schedule, ...): one line says so, and the frames that tell why follow. */
static void print_stack(const d9_analyze_render *R, const d9a_stack_view *v, const char *indent, bool offcpu) {
    if (!v) return;
    uint32_t i = 0;
    if (offcpu) {
        while (i < v->nframes && d9a_is_scheduler_frame(v->frames[i].symbol)) i++;
        if (i == v->nframes) i = 0;
        if (i == 1) i = 0;
        if (i > 1)
            fprintf(text_out, "%s(%u scheduler frames: %s .. %s)\n", indent, i, v->frames[0].symbol,
                   v->frames[i - 1].symbol);
    }
    unsigned shown = 0;
    for (; i < v->nframes && shown < R->stack_depth; i++, shown++) {
        fprintf(text_out, "%s", indent);
        print_frame(&v->frames[i]);
        putc('\n', text_out);
    }
    if (i < v->nframes) fprintf(text_out, "%s... %u more frames\n", indent, v->nframes - i);
    if (v->nframes == 0) fprintf(text_out, "%s(empty stack)\n", indent);
    else if (v->truncated) fprintf(text_out, "%s(truncated: its callers were not recorded)\n", indent);
}

/* A long line of flag text, wrapped at spaces to ~110 columns under `indent`. */
static void print_wrapped(const char *indent, const char *prefix, const char *text) {
    const size_t width = 110, start = strlen(indent) + strlen(prefix);
    size_t col = start;
    fprintf(text_out, "%s%s", indent, prefix);
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t word = strcspn(p, " ");
        if (!word) break;
        if (col > start && col + 1 + word > width) {
            fprintf(text_out, "\n%s%*s", indent, (int)strlen(prefix), "");
            col = start;
        } else if (col > start) {
            putc(' ', text_out);
            col++;
        }
        fprintf(text_out, "%.*s", (int)word, p);
        col += word;
        p += word;
    }
    putc('\n', text_out);
}

static void text_summary(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    char w1[64];
    fprintf(text_out, "SUMMARY\n");
    for (size_t i = 0; i < r->nmetadata; i++)
        if (!strcmp(r->metadata[i].key, "service"))
            fprintf(text_out, "  service        %s\n", r->metadata[i].value);
    fprintf(text_out, "  files          %zu", R->nfiles);
    /* the first few not read whole, on this one line: a directory of thousands of them (a
     * PATH that is not a trace directory) must not make it megabytes long; stderr names each */
    enum { NAMED_AT_MOST = 5 };
    size_t not_whole = 0;
    for (size_t i = 0; i < R->nfiles; i++)
        if (d9_file_failed(&R->files[i]) || R->files[i].status == D9_DEC_TRUNCATED)
            if (not_whole++ < NAMED_AT_MOST)
                fprintf(text_out, "  [%s: %s]", R->files[i].path, d9_file_status_name(&R->files[i]));
    if (not_whole > NAMED_AT_MOST)
        fprintf(text_out, "  [and %zu more not read whole: see stderr]", not_whole - NAMED_AT_MOST);
    putc('\n', text_out);
    fprintf(text_out, "  time           %s", NS(r->duration_ns));
    if (r->duration_ns)
        fprintf(text_out, "  (%" PRIu64 " .. %" PRIu64 " ns", r->start_ns, r->end_ns);
    if (r->duration_ns && d9a_wall_time(r, r->start_ns, w1, sizeof w1)) fprintf(text_out, ", from %s", w1);
    if (r->duration_ns) putc(')', text_out);
    if (r->windowed)
        fprintf(text_out, "  [--from/--to: +%.6f s .. +%.6f s of %s]", d9a_rel_s(r, r->start_ns),
               d9a_rel_s(r, r->end_ns), NS(r->trace_last_ns - r->trace_first_ns));
    putc('\n', text_out);
    fprintf(text_out, "  workers        %zu", r->nworkers);
    for (size_t i = 0; i < r->nworkers; i++) fprintf(text_out, "%s%" PRIu64, i ? ", " : " (", r->workers[i].id);
    fprintf(text_out, "%s\n", r->nworkers ? ")" : "");
    fprintf(text_out, "  events         %" PRIu64 ": polls %" PRIu64 ", parks %" PRIu64 ", wakes %" PRIu64
           ", spawns %" PRIu64 ", terminations %" PRIu64 ", CPU samples %" PRIu64
           ", off-CPU samples %" PRIu64 ", sched switches %" PRIu64 ", task dumps %" PRIu64
           ", queue samples %" PRIu64 ", symbols %" PRIu64 ", other %" PRIu64 "\n",
           r->events, r->counts.poll_starts, r->counts.parks, r->counts.wakes, r->counts.spawns,
           r->counts.terminates, r->counts.cpu_samples, r->counts.offcpu_samples,
           r->counts.sched_switches, r->counts.task_dumps, r->counts.queue_samples,
           r->counts.symbols, r->counts.other);
    if (r->dropped == 0) {
        fprintf(text_out, "  dropped        none\n");
    } else {
        fprintf(text_out, "  dropped        %" PRIu64 " events (", r->dropped);
        for (size_t i = 0; i < r->ndrops; i++)
            fprintf(text_out, "%s%s %" PRIu64, i ? ", " : "", r->drops_by_reason[i].name, r->drops_by_reason[i].count);
        fprintf(text_out, ")\n");
    }
    fprintf(text_out, "  data sources  ");
    for (size_t i = 0; i < r->nsources; i++)
        if (r->sources[i].active) fprintf(text_out, " %s", r->sources[i].name);
    putc('\n', text_out);
    bool any_missing = false;
    for (size_t i = 0; i < r->nsources; i++) {
        const d9a_source *s = &r->sources[i];
        if (s->active) continue;
        if (!any_missing) fprintf(text_out, "  not in trace  ");
        any_missing = true;
        fprintf(text_out, " %s", s->name);
        if (s->declared) fprintf(text_out, " (%s)", s->declared);
    }
    if (any_missing) putc('\n', text_out);
    if (r->nmetadata_changed) { /* the recorder rewrites changed metadata: a source may have stopped */
        fprintf(text_out, "  metadata       %zu key%s changed during the run (their last values count; --json: "
                          "metadata_changed)\n",
                r->nmetadata_changed, r->nmetadata_changed == 1 ? "" : "s");
        for (size_t i = 0; i < r->nmetadata_changed; i++) {
            const d9a_kv_change *m = &r->metadata_changed[i];
            if (strncmp(m->key, "source.", 7) != 0) continue; /* runtimes' workers, governor notes: in JSON */
            fprintf(text_out, "                 %s: %s -> %s\n", m->key, m->first ? m->first : "(not said)", m->last);
        }
    }
    for (size_t i = 0; i < r->ncoverage; i++) { /* governed sources (CoverageEvent) */
        const d9a_coverage_source *c = &r->coverage[i];
        if (!c->partial) {
            fprintf(text_out, "  coverage       %s full (cost governor)\n", c->name);
            continue;
        }
        fprintf(text_out, "  coverage       %s PARTIAL: %s of %s not fully recorded (no stacks %s, sampled %s, paused %s; "
               "%" PRIu64 " changes) by the cost governor: no record there is not \"nothing happened\"\n",
               c->name, NS(c->no_stacks_ns + c->sampled_ns + c->paused_ns), NS(c->covered_ns), NS(c->no_stacks_ns),
               NS(c->sampled_ns), NS(c->paused_ns), c->changes);
    }
    d9a_poll_cpu_cover_text(&r->poll_cpu, text_out); /* long polls' off-CPU time, accounted */
    if (r->upload_lost.segments) { /* UploadLossEvent: never reached S3 */
        char what[256];
        d9a_upload_loss_describe(&r->upload_lost, what, sizeof what);
        fprintf(text_out, "  lost           %s by the disk budget: that time is not in this trace\n", what);
    }
    if (r->late_records || r->unresolved_refs)
        fprintf(text_out, "  data quality   %" PRIu64 " records out of order beyond the window, %" PRIu64
               " unresolved pool references\n",
               r->late_records, r->unresolved_refs);
}

static void text_flags(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nRED FLAGS\n");
    if (r->nflags == 0) {
        fprintf(text_out, "  none\n");
        return;
    }
    for (size_t i = 0; i < r->nflags; i++) {
        const d9a_flag *f = &r->flags[i];
        char sev[16];
        snprintf(sev, sizeof sev, "%s", d9a_severity_name(f->severity));
        for (char *p = sev; *p; p++) *p = (char)(*p - 32 * (*p >= 'a' && *p <= 'z'));
        fprintf(text_out, "  %-8s  %-17s %s\n", sev, f->code, f->title);
        const char *indent = "                              ";
        if (f->evidence[0]) print_wrapped(indent, "", f->evidence);
        if (f->hint[0]) print_wrapped(indent, "-> ", f->hint);
    }
}

static void text_workers(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nWORKER UTILIZATION (busy = time in polls)\n");
    if (r->nworkers == 0) {
        fprintf(text_out, "  no worker events\n");
        return;
    }
    fprintf(text_out, "  %6s  %8s  %11s  %6s  %7s  %11s  %7s  %8s  %10s  %10s  %11s\n", "worker", "polls",
           "poll time", "busy", "parks", "park time", "parked", "cpu/wall", "sched p99",
           "sched max", "queued+idle");
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        char ratio[16] = "-";
        if (w->cpu_ratio >= 0) snprintf(ratio, sizeof ratio, "%.2f", w->cpu_ratio);
        fprintf(text_out, "  %6" PRIu64 "  %8" PRIu64 "  %11s  %5.1f%%  %7" PRIu64 "  %11s  %6.1f%%  %8s  %10s  "
               "%10s  %11" PRIu64 "\n",
               w->id, w->polls, NS(w->poll_ns), w->busy_pct, w->parks, NS(w->park_ns),
               w->parked_pct, ratio, w->sched_wait.count ? NS(w->sched_wait.p99) : "-",
               w->sched_wait.count ? NS(w->sched_wait.max) : "-", w->polls_with_queue_while_parked);
    }
    /* which runtime each worker runs (a home-grown loop's is its name: "aeMain (redis-server)") */
    for (size_t i = 0; i < r->nworkers; i++)
        if (r->workers[i].runtime)
            fprintf(text_out, "  worker %" PRIu64 ": runtime %s\n", r->workers[i].id, r->workers[i].runtime);
    fprintf(text_out, "  cpu/wall: CPU time over wall time from unpark to park (below 1: off-CPU while "
           "busy); queued+idle: polls started with a queue while another worker was parked\n");
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        if (w->offcpu_in_poll_ns)
            fprintf(text_out, "  worker %" PRIu64 ": off-CPU inside polls %s (preempted %s)\n", w->id,
                   NS(w->offcpu_in_poll_ns), NS(w->preempted_in_poll_ns));
    }
}

/* "on-CPU 1.20ms 40.0%, lock 1.80ms 60.0%": the nonzero parts of a poll or a sum of polls
 * (model/attribution.h), in the order of the definition. */
static void print_parts(const d9m_parts *p) {
    uint64_t total = d9m_parts_total(p);
    const char *sep = "";
    for (int i = 0; i < D9M_PARTS; i++) {
        if (!p->ns[i]) continue;
        fprintf(text_out, "%s%s %s %.1f%%", sep, d9m_part_names[i], NS(p->ns[i]),
                100.0 * (double)p->ns[i] / (double)total);
        sep = ", ";
    }
    if (!total) fprintf(text_out, "nothing");
}

static void text_long_polls(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nLONG POLLS (top %zu of %" PRIu64 " polls; p50 %s, p90 %s, p99 %s, max %s; %" PRIu64
           " > %s, %" PRIu64 " > %s)\n",
           r->nlong_polls, r->polls.count, NS(r->polls.p50), NS(r->polls.p90), NS(r->polls.p99),
           NS(r->polls.max), r->polls_over_warn, NS(R->opt->long_poll_warn_ns), r->polls_over_crit,
           NS(R->opt->long_poll_crit_ns));
    if (r->nlong_polls == 0) {
        fprintf(text_out, "  no polls\n");
        return;
    }
    fprintf(text_out, "  %3s  %11s  %6s  %8s  %13s  %s\n", "#", "duration", "worker", "task", "start",
           "spawn location");
    for (size_t i = 0; i < r->nlong_polls; i++) {
        const d9a_long_poll *p = &r->long_polls[i];
        fprintf(text_out, "  %3zu  %11s  %6" PRIu64 "  %#8" PRIx64 "  %+12.6fs  %s\n", i + 1, NS(p->duration_ns),
               p->worker, p->task, d9a_rel_s(r, p->start_ns), p->location);
        if (p->offcpu_ns)
            fprintf(text_out, "       off-CPU %s of it (preempted %s)\n", NS(p->offcpu_ns), NS(p->preempted_ns));
        fprintf(text_out, "       where: ");
        print_parts(&p->parts);
        putc('\n', text_out);
        if (p->cpu_samples + p->offcpu_samples == 0) continue;
        fprintf(text_out, "       samples inside: %" PRIu64 " CPU, %" PRIu64 " off-CPU\n", p->cpu_samples,
               p->offcpu_samples);
        for (size_t g = 0; g < p->ngroups && g < 3; g++) {
            const d9a_poll_sample_group *grp = &p->groups[g];
            if (!grp->stack) continue;
            fprintf(text_out, "       %" PRIu64 " %s in %s%s", grp->count, grp->source ? "off-CPU" : "CPU",
                   grp->stack->function, grp->stack->preempted ? " (preempted)" : "");
            if (grp->est_ns) fprintf(text_out, ", off-CPU up to %s", NS(grp->est_ns));
            if (grp->stack->syscall) fprintf(text_out, ", in %s()", grp->stack->syscall);
            if (grp->stack->app_frame) fprintf(text_out, "  <- app: %s", grp->stack->app_frame);
            putc('\n', text_out);
            print_stack(R, grp->stack, "           ", grp->source != 0);
        }
        if (p->ngroups > 3) fprintf(text_out, "       ... %zu more stacks (--json has them)\n", p->ngroups - 3);
    }
}

static void text_sched(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nKERNEL SCHEDULING DELAYS (sched_wait_ns on unpark: runnable but not running)\n");
    if (r->sched_wait.count == 0) {
        fprintf(text_out, "  no data (unpark events carry no sched_wait_ns)\n");
        return;
    }
    fprintf(text_out, "  %" PRIu64 " unparks: p50 %s, p90 %s, p99 %s, max %s; %" PRIu64 " > %s, %" PRIu64
           " > %s\n",
           r->sched_wait.count, NS(r->sched_wait.p50), NS(r->sched_wait.p90), NS(r->sched_wait.p99),
           NS(r->sched_wait.max), r->sched_over_warn, NS(R->opt->sched_delay_warn_ns),
           r->sched_over_crit, NS(R->opt->sched_delay_crit_ns));
    if (r->nsched_worst == 0 || r->sched_worst[0].wait_ns == 0) return;
    fprintf(text_out, "  %11s  %6s  %8s  %13s\n", "wait", "worker", "tid", "at");
    for (size_t i = 0; i < r->nsched_worst; i++) {
        const d9a_sched_delay *s = &r->sched_worst[i];
        if (s->wait_ns == 0) break;
        fprintf(text_out, "  %11s  %6" PRIu64 "  %8" PRIu64 "  %+12.6fs\n", NS(s->wait_ns), s->worker, s->tid,
               d9a_rel_s(r, s->ts));
    }
}

static void text_wakes(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nWAKE TO POLL DELAYS (a task's wake to its next poll start)\n");
    if (r->wakes == 0) {
        fprintf(text_out, "  no wake events\n");
        return;
    }
    fprintf(text_out, "  %" PRIu64 " wakes; %" PRIu64 " delays measured: p50 %s, p90 %s, p99 %s, max %s; %" PRIu64
           " > %s; %" PRIu64 " tasks woken but not polled afterwards\n",
           r->wakes, r->wake_delay.count, NS(r->wake_delay.p50), NS(r->wake_delay.p90),
           NS(r->wake_delay.p99), NS(r->wake_delay.max), r->wake_over_warn,
           NS(R->opt->wake_delay_warn_ns), r->wakes_unpolled);
    if (r->nwake_worst == 0) return;
    fprintf(text_out, "  %11s  %8s  %13s  %6s  %5s  %s\n", "delay", "task", "woken at", "worker", "wakes",
           "spawn location");
    for (size_t i = 0; i < r->nwake_worst; i++) {
        const d9a_wake_delay *w = &r->wake_worst[i];
        fprintf(text_out, "  %11s  %#8" PRIx64 "  %+12.6fs  %6" PRIu64 "  %5" PRIu64 "  %s\n", NS(w->delay_ns),
               w->task, d9a_rel_s(r, w->wake_ns), w->worker, w->wakes, w->location);
    }
}

static void text_locations(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    size_t n = 0;
    for (size_t i = 0; i < r->nlocations; i++)
        if (r->locations[i].polls.count) n++;
    size_t shown = n < R->opt->top_n ? n : R->opt->top_n;
    fprintf(text_out, "\nPOLL DURATION BY SPAWN LOCATION (top %zu of %zu by total poll time)\n", shown, n);
    if (n == 0) {
        fprintf(text_out, "  no polls\n");
        return;
    }
    fprintf(text_out, "  %8s  %11s  %10s  %10s  %11s  %7s  %s\n", "polls", "total", "p50", "p99", "max",
           "> warn", "location");
    for (size_t i = 0, k = 0; i < r->nlocations && k < shown; i++) {
        const d9a_location_report *l = &r->locations[i];
        if (!l->polls.count) continue;
        k++;
        fprintf(text_out, "  %8" PRIu64 "  %11s  %10s  %10s  %11s  %7" PRIu64 "  %s\n", l->polls.count,
               NS(l->polls.total), NS(l->polls.p50), NS(l->polls.p99), NS(l->polls.max),
               l->polls_over_warn, l->location);
    }
}

static void text_attribution(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    size_t n = 0;
    for (size_t i = 0; i < r->nlocations; i++)
        if (r->locations[i].polls.count) n++;
    size_t shown = n < R->opt->top_n ? n : R->opt->top_n;
    fprintf(text_out, "\nWHERE THE POLL TIME WENT (top %zu of %zu spawn locations by total poll time; "
                      "docs/analyze.md, \"Where the poll time went\")\n", shown, n);
    if (n == 0) {
        fprintf(text_out, "  no polls\n");
        return;
    }
    fprintf(text_out, "  all polls: ");
    print_parts(&r->parts);
    putc('\n', text_out);
    for (size_t i = 0, k = 0; i < r->nlocations && k < shown; i++) {
        const d9a_location_report *l = &r->locations[i];
        if (!l->polls.count) continue;
        k++;
        fprintf(text_out, "  %s\n      ", l->location);
        print_parts(&l->parts);
        putc('\n', text_out);
    }
}

static void text_lifecycle(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nTASK LIFECYCLE\n");
    if (r->spawned == 0 && r->terminated == 0) {
        fprintf(text_out, "  no spawn or terminate events\n");
        return;
    }
    fprintf(text_out, "  spawned %" PRIu64 ", terminated %" PRIu64 " (%" PRIu64
           " of them spawned before the analyzed time), alive at the end %" PRIu64
           " (live-task growth over the second half: %+.1f/s)\n",
           r->spawned, r->terminated, r->terminated_unknown, r->live_at_end, r->live_growth_per_s);
    if (r->nlive_series > 1) {
        fprintf(text_out, "  live tasks:");
        size_t step = (r->nlive_series + 11) / 12;
        for (size_t i = 0; i < r->nlive_series; i += step)
            fprintf(text_out, " %.2fs=%" PRId64, (double)r->live_series[i].t_ns / 1e9, r->live_series[i].live);
        const d9a_live_point *last = &r->live_series[r->nlive_series - 1];
        if ((r->nlive_series - 1) % step)
            fprintf(text_out, " %.2fs=%" PRId64, (double)last->t_ns / 1e9, last->live);
        putc('\n', text_out);
    }
    /* locations by spawns */
    const d9a_location_report **by = calloc(r->nlocations ? r->nlocations : 1, sizeof *by);
    if (!by) return;
    size_t n = 0;
    for (size_t i = 0; i < r->nlocations; i++)
        if (r->locations[i].spawned || r->locations[i].terminated) by[n++] = &r->locations[i];
    for (size_t i = 1; i < n; i++) { /* by live, then spawned */
        const d9a_location_report *v = by[i];
        size_t j = i;
        while (j > 0 && (by[j - 1]->live < v->live ||
                         (by[j - 1]->live == v->live && by[j - 1]->spawned < v->spawned))) {
            by[j] = by[j - 1];
            j--;
        }
        by[j] = v;
    }
    if (n) fprintf(text_out, "  %8s  %10s  %6s  %s\n", "spawned", "terminated", "alive", "spawn location");
    for (size_t i = 0; i < n && i < R->opt->top_n; i++)
        fprintf(text_out, "  %8" PRIu64 "  %10" PRIu64 "  %6" PRIu64 "  %s\n", by[i]->spawned, by[i]->terminated,
               by[i]->live, by[i]->location);
    free(by);
}

static void text_groups(const d9_analyze_render *R, const d9a_sample_group *g, size_t n, bool offcpu,
                        const char *what) {
    if (n == 0) return;
    fprintf(text_out, "  by %s:\n", what);
    if (offcpu)
        fprintf(text_out, "  %8s  %8s  %11s  %8s  %s\n", "samples", "in poll", "time (est)", "parked",
               "blocking function");
    else
        fprintf(text_out, "  %8s  %8s  %8s  %s\n", "samples", "in poll", "elsewhere", "leaf function");
    for (size_t i = 0; i < n; i++) {
        if (offcpu)
            fprintf(text_out, "  %8" PRIu64 "  %8" PRIu64 "  %11s  %8" PRIu64 "  %s%s", g[i].samples,
                   g[i].in_poll, NS(g[i].in_poll_ns), g[i].parked, g[i].function,
                   g[i].preempted ? " (preempted)" : "");
        else
            fprintf(text_out, "  %8" PRIu64 "  %8" PRIu64 "  %8" PRIu64 "  %s", g[i].samples, g[i].in_poll,
                   g[i].samples - g[i].in_poll, g[i].function);
        if (g[i].syscall) fprintf(text_out, "  [in %s()]", g[i].syscall);
        if (g[i].app_frame) fprintf(text_out, "  <- app: %s", g[i].app_frame);
        if (g[i].example_location) fprintf(text_out, "  [task from %s]", g[i].example_location);
        putc('\n', text_out);
    }
    (void)R;
}

static void text_stack_groups(const d9_analyze_render *R, const d9a_sample_group *g, size_t n, bool offcpu) {
    if (n == 0) return;
    size_t shown = n < 5 ? n : 5;
    fprintf(text_out, "  by stack (top %zu, leaf first):\n", shown);
    for (size_t i = 0; i < shown; i++) {
        fprintf(text_out, "    #%zu  %" PRIu64 " samples, %" PRIu64 " inside polls: %s", i + 1, g[i].samples,
               g[i].in_poll, g[i].function);
        if (offcpu && g[i].in_poll_ns) fprintf(text_out, ", off-CPU in polls up to %s", NS(g[i].in_poll_ns));
        if (offcpu && g[i].parked) fprintf(text_out, " (%" PRIu64 " while parked)", g[i].parked);
        putc('\n', text_out);
        print_stack(R, g[i].stack, "         ", offcpu);
    }
}

static void text_blocking(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nBLOCKING CALLS (off-CPU samples: %" PRIu64 "; inside polls %" PRIu64 ", while parked %"
           PRIu64 ", elsewhere %" PRIu64 ")\n",
           r->offcpu_total, r->offcpu_in_poll, r->offcpu_parked, r->offcpu_other);
    fprintf(text_out, "  time (est): from each sample inside a poll to the worker's next sample or the end "
           "of the poll (an upper bound)\n");
    for (size_t i = 0; i < r->ncoverage_periods; i++) {
        const d9a_coverage_period *p = &r->coverage_periods[i];
        if (strcmp(p->source, "off_cpu") != 0) continue;
        if (!strcmp(p->mode, "sampled"))
            fprintf(text_out, "  partial: %+.3f s .. %+.3f s switch records and stacks 1 window in %u\n", d9a_rel_s(r, p->from_ns),
                   d9a_rel_s(r, p->to_ns), p->one_in);
        else
            fprintf(text_out, "  partial: %+.3f s .. %+.3f s %s\n", d9a_rel_s(r, p->from_ns), d9a_rel_s(r, p->to_ns),
                   !strcmp(p->mode, "paused") ? "switch records and stacks paused" : "stacks paused");
    }
    if (r->offcpu_total == 0) {
        fprintf(text_out, "  no off-CPU (context switch) samples%s\n",
               r->ncoverage_periods ? " recorded: coverage was partial (above), which is not \"no blocking\"" : "");
        return;
    }
    text_groups(R, r->blocking_functions, r->nblocking_functions, true, "blocking function");
    if (r->nblocking_syscalls) {
        fprintf(text_out, "  by system call:\n");
        fprintf(text_out, "  %8s  %8s  %11s  %8s  %-16s %s\n", "samples", "in poll", "time (est)", "parked",
               "system call", "top blocking function");
        for (size_t i = 0; i < r->nblocking_syscalls; i++) {
            const d9a_sample_group *g = &r->blocking_syscalls[i];
            char call[64];
            snprintf(call, sizeof call, "%s%s", g->syscall ? g->syscall : "(none)", g->syscall ? "()" : "");
            fprintf(text_out, "  %8" PRIu64 "  %8" PRIu64 "  %11s  %8" PRIu64 "  %-16s %s\n", g->samples,
                   g->in_poll, NS(g->in_poll_ns), g->parked, call, g->function);
        }
    }
    text_stack_groups(R, r->blocking_stacks, r->nblocking_stacks, true);
    if (r->nlock_waits) {
        fprintf(text_out, "\nLOCK CONTENTION (off-CPU samples inside polls waiting for a lock, by the function that took it)\n");
        fprintf(text_out, "  %8s  %11s  %11s  %-24s %s\n", "waits", "time (est)", "worst (est)", "lock function",
               "called from");
        for (size_t i = 0; i < r->nlock_waits; i++) {
            const d9a_lock_wait *w = &r->lock_waits[i];
            fprintf(text_out, "  %8" PRIu64 "  %11s  %11s  %-24s %s\n", w->samples, NS(w->total_ns), NS(w->worst_ns),
                   w->lock_function, w->app_frame ? w->app_frame : "(unknown)");
        }
    }
}

static void text_cpu(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nCPU HOT SPOTS (CPU samples: %" PRIu64 "; inside polls %" PRIu64 ")\n", r->cpu_total,
           r->cpu_in_poll);
    if (r->cpu_total == 0) {
        fprintf(text_out, "  no CPU samples\n");
        return;
    }
    text_groups(R, r->cpu_functions, r->ncpu_functions, false, "leaf function");
    text_stack_groups(R, r->cpu_stacks, r->ncpu_stacks, false);
}

static void text_migration(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nTASK MIGRATION\n");
    if (r->tasks_polled == 0) {
        fprintf(text_out, "  no polls\n");
        return;
    }
    fprintf(text_out, "  %" PRIu64 " tasks polled, %" PRIu64 " moved between workers; %" PRIu64 " of %" PRIu64
           " polls ran on another worker than the task's previous poll (%.1f %%), %.1f migrations/s\n",
           r->tasks_polled, r->tasks_migrated, r->migrations, r->migration_polls,
           r->migration_polls ? 100.0 * (double)r->migrations / (double)r->migration_polls : 0.0,
           r->migrations_per_s);
    if (r->ntop_migrating == 0) return;
    fprintf(text_out, "  %8s  %6s  %8s  %s\n", "task", "hops", "polls", "spawn location");
    for (size_t i = 0; i < r->ntop_migrating; i++) {
        const d9a_migrating_task *m = &r->top_migrating[i];
        fprintf(text_out, "  %#8" PRIx64 "  %6" PRIu64 "  %8" PRIu64 "  %s\n", m->task, m->hops, m->polls,
               m->location ? m->location : "?");
    }
}

static void text_queued(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    fprintf(text_out, "\nIDLE WORKERS WHILE WORK WAS QUEUED\n");
    fprintf(text_out, "  %" PRIu64 " polls started with local_queue > 0, %" PRIu64
           " of them while another worker was parked; global queue > 0 in %" PRIu64
           " queue samples, %" PRIu64 " of them while a worker was parked\n",
           r->polls_with_queue, r->polls_with_queue_while_parked, r->queue_samples_nonzero,
           r->queue_samples_nonzero_while_parked);
    if (r->nqueued_examples == 0) return;
    fprintf(text_out, "  %13s  %6s  %6s  %13s\n", "at", "worker", "queued", "parked worker");
    for (size_t i = 0; i < r->nqueued_examples; i++) {
        const d9a_queued_example *q = &r->queued_examples[i];
        fprintf(text_out, "  %+12.6fs  %6" PRIu64 "  %6" PRIu64 "  %13" PRIu64 "\n", d9a_rel_s(r, q->ts), q->worker,
               q->local_queue, q->parked_worker);
    }
}

/* Only when the trace has spans. Parts in % of the ended spans' total elapsed time. */
static void text_spans(const d9_analyze_render *R) {
    const d9a_report *r = R->r;
    if (!r->nspans && !r->span_stray_ends) return;
    size_t shown = r->nspans < R->opt->top_n ? r->nspans : R->opt->top_n;
    fprintf(text_out, "\nSPANS BY NAME (top %zu of %zu by total elapsed time; where it went: in polls of the span's tasks, "
                      "queued for a poll, waiting for a wake, unknown)\n", shown, r->nspans);
    fprintf(text_out, "  %8s  %8s  %11s  %10s  %10s  %11s  %6s  %6s  %6s  %6s  %s\n", "spans", "unended", "total", "p50",
            "p99", "max", "poll", "queued", "wait", "unknwn", "name");
    for (size_t i = 0; i < shown; i++) {
        const d9a_span_report *s = &r->spans[i];
        double t = s->elapsed.total ? (double)s->elapsed.total : 1.0;
        fprintf(text_out, "  %8" PRIu64 "  %8" PRIu64 "  %11s  %10s  %10s  %11s  %5.1f%%  %5.1f%%  %5.1f%%  %5.1f%%  %s\n",
                s->count, s->unended, NS(s->elapsed.total), NS(s->elapsed.p50), NS(s->elapsed.p99),
                NS(s->elapsed.max), 100.0 * (double)s->poll_ns / t, 100.0 * (double)s->queued_ns / t,
                100.0 * (double)s->wait_ns / t, 100.0 * (double)s->unknown_ns / t, s->name);
        if (!s->poll_ns) continue;
        fprintf(text_out, "            in polls: "); /* the poll part by cause */
        print_parts(&s->poll_parts);
        putc('\n', text_out);
    }
    if (r->span_stray_ends || r->span_reopened)
        fprintf(text_out, "  %" PRIu64 " ends closed no open span; %" PRIu64 " begins reopened an open one (left unended)\n",
                r->span_stray_ends, r->span_reopened);
}

static void text_heap_sites(const d9_analyze_render *R, const char *title, const d9a_heap_site_report *s, size_t n,
                            bool growth_known) {
    fprintf(text_out, "  %s\n", title);
    if (n == 0) fprintf(text_out, "    none\n");
    for (size_t i = 0; i < n; i++) {
        char a[32], u[32], p[32], g[32];
        fprintf(text_out, "    %2zu. %s  allocated %s (%.0f blocks), in use at end %s (%.0f blocks), peak %s",
                i + 1, s[i].stack && s[i].stack->nframes ? s[i].stack->function : "<no stack>",
                d9_bytes_text(a, sizeof a, s[i].alloc_bytes), s[i].alloc_count, d9_bytes_text(u, sizeof u, s[i].inuse_bytes),
                s[i].inuse_count, d9_bytes_text(p, sizeof p, s[i].peak_inuse_bytes));
        if (growth_known) fprintf(text_out, ", growth over the second half %s", d9_bytes_text(g, sizeof g, s[i].growth_bytes));
        fprintf(text_out, "; %" PRIu64 " samples, %" PRIu64 " frees\n", s[i].samples, s[i].frees);
        print_stack(R, s[i].stack, "          ", false);
    }
}

/* The sampled heap profile (AllocEvent, FreeEvent): every sample weighted before summing. */
static void text_heap(const d9_analyze_render *R) {
    const d9a_heap_report *h = &R->r->heap;
    if (!h->present) return;
    char a[32], u[32];
    fprintf(text_out, "\nHEAP (sampled: one sample per %" PRIu64 " bytes on average; estimates weighted by 1/(1-e^(-size/rate)))\n",
            h->rate);
    fprintf(text_out, "  %" PRIu64 " samples, %" PRIu64 " frees of sampled blocks (%" PRIu64
            " frees of blocks sampled before the trace); allocated %s, in use at end %s\n",
            h->samples, h->frees, h->frees_unmatched, d9_bytes_text(a, sizeof a, h->alloc_bytes),
            d9_bytes_text(u, sizeof u, h->inuse_bytes));
    text_heap_sites(R, "leak candidates (in use at the end, never freed from)", h->leaks, h->nleaks, h->growth_known);
    text_heap_sites(R, "top sites by bytes in use at the end", h->by_inuse, h->nby_inuse, h->growth_known);
    text_heap_sites(R, "top sites by bytes allocated", h->by_alloc, h->nby_alloc, h->growth_known);
}

void d9_analyze_print_text(const d9_analyze_render *R) {
    /* names, locations and symbols are the trace's: their control characters are escaped */
    FILE *safe = d9_escaping_stream(stdout);
    text_out = safe ? safe : stdout;
    text_summary(R);
    text_flags(R);
    text_workers(R);
    text_long_polls(R);
    text_sched(R);
    text_wakes(R);
    text_locations(R);
    text_attribution(R);
    text_spans(R);
    text_lifecycle(R);
    text_blocking(R);
    text_cpu(R);
    text_migration(R);
    text_queued(R);
    text_heap(R);
    if (safe) fclose(safe);
    text_out = stdout;
}
