/* `dial9 analyze [--json] [--from T --to T] [--top N] PATH...`: what happened in a trace and
 * what looks wrong, in one pass (src/analysis). Text for people, --json for scripts (schema
 * in docs/analyze.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/analysis.h"
#include "analysis/frame_class.h"
#include "cli/cli.h"
#include "common/json_writer.h"
#include "cli/trace_paths.h"
#include "cli/time_options.h"
#include "cli/trace_reader.h"

static void analyze_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 analyze [--json] [--from T] [--to T] [--top N] [--stack-depth N]\n"
            "                     [--window N] PATH...\n"
            "\n"
            "Analyze a trace in one pass and report: summary and data sources, red flags,\n"
            "worker utilization, the longest polls with the stacks sampled inside them,\n"
            "kernel scheduling delays, wake-to-poll delays, poll durations by spawn location,\n"
            "task lifecycle, blocking calls (off-CPU samples), CPU hot spots, task migration,\n"
            "and queued work while a worker was parked.\n"
            "\n"
            "  --json           one JSON object (schema: docs/analyze.md)\n"
            "  --from T, --to T analyze [T1, T2) only. T is a time since the trace start with a\n"
            "                   unit (1.5s, 200ms, 350us, 42ns, 2m, 1h), - and a time before its\n"
            "                   end (-15m), or @ and an absolute trace timestamp\n"
            "                   (@503226032430072); a bare number is refused\n"
            "  --top N          entries per list (default 10)\n"
            "  --stack-depth N  frames printed per stack in text (default 16; JSON has all)\n"
            "  --window N       records kept for time ordering (default 524288, 32 bytes each)\n"
            "  -h, --help\n"
            "\n"
            "Exit status: 0 all read (a truncated tail is fine), 1 a file could not be read or\n"
            "decoded (what was read is still analyzed), 2 usage error.\n");
}

/* ------------------------------------------------------------------------------------------
 * Shared by the text and JSON output
 * ---------------------------------------------------------------------------------------- */

typedef struct render {
    const d9a_report *r;
    const d9a_options *opt;
    size_t nfiles;
    const d9_file_result *files;
    unsigned stack_depth;
} render;

static double rel_s(const d9a_report *r, uint64_t ts) {
    return ts >= r->trace_first_ns ? (double)(ts - r->trace_first_ns) / 1e9
                                   : -(double)(r->trace_first_ns - ts) / 1e9;
}

/* ISO 8601 UTC wall-clock time of a trace timestamp, from the first ClockSyncEvent. */
static bool wall_time(const d9a_report *r, uint64_t ts, char *buf, size_t len) {
    if (!r->have_clock_sync) return false;
    int64_t delta = (int64_t)(ts - r->clock_mono_ns);
    int64_t real = (int64_t)r->clock_realtime_ns + delta;
    if (real < 0) return false;
    time_t sec = (time_t)(real / 1000000000);
    struct tm tm;
    if (!gmtime_r(&sec, &tm)) return false;
    char date[40];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%06" PRId64 "Z", date, (real % 1000000000) / 1000);
    return true;
}

static const char *ns_str(char *buf, size_t len, uint64_t ns) { return d9a_format_ns(buf, len, ns); }

/* ------------------------------------------------------------------------------------------
 * Text
 * ---------------------------------------------------------------------------------------- */

#define NS(v) ns_str((char[32]){0}, 32, (v))

static void print_frame(const d9a_frame *f) {
    if (f->symbol) {
        printf("%s", f->symbol);
        if (f->inlined) printf(" [inlined]");
        if (f->file && f->file[0]) printf("  (%s:%u)", d9a_basename(f->file), f->line);
    } else {
        printf("0x%" PRIx64, f->addr);
        if (f->object) printf("  (%s+0x%" PRIx64 ")", d9a_basename(f->object), f->object_offset);
        else if (f->kernel) printf("  (kernel)");
    }
}

/* Frames leaf first, at most --stack-depth. Off-CPU stacks start with the scheduler's own
 * frames (__schedule, schedule, ...): one line says so, and the frames that tell why follow. */
static void print_stack(const render *R, const d9a_stack_view *v, const char *indent, bool offcpu) {
    if (!v) return;
    uint32_t i = 0;
    if (offcpu) {
        while (i < v->nframes && d9a_is_scheduler_frame(v->frames[i].symbol)) i++;
        if (i == v->nframes) i = 0;
        if (i == 1) i = 0;
        if (i > 1)
            printf("%s(%u scheduler frames: %s .. %s)\n", indent, i, v->frames[0].symbol,
                   v->frames[i - 1].symbol);
    }
    unsigned shown = 0;
    for (; i < v->nframes && shown < R->stack_depth; i++, shown++) {
        printf("%s", indent);
        print_frame(&v->frames[i]);
        putchar('\n');
    }
    if (i < v->nframes) printf("%s... %u more frames\n", indent, v->nframes - i);
    if (v->nframes == 0) printf("%s(empty stack)\n", indent);
}

/* A long line of flag text, wrapped at spaces to ~110 columns under `indent`. */
static void print_wrapped(const char *indent, const char *prefix, const char *text) {
    const size_t width = 110, start = strlen(indent) + strlen(prefix);
    size_t col = start;
    printf("%s%s", indent, prefix);
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t word = strcspn(p, " ");
        if (!word) break;
        if (col > start && col + 1 + word > width) {
            printf("\n%s%*s", indent, (int)strlen(prefix), "");
            col = start;
        } else if (col > start) {
            putchar(' ');
            col++;
        }
        printf("%.*s", (int)word, p);
        col += word;
        p += word;
    }
    putchar('\n');
}

static void text_summary(const render *R) {
    const d9a_report *r = R->r;
    char w1[64];
    printf("SUMMARY\n");
    for (size_t i = 0; i < r->nmetadata; i++)
        if (!strcmp(r->metadata[i].key, "service"))
            printf("  service        %s\n", r->metadata[i].value);
    printf("  files          %zu", R->nfiles);
    for (size_t i = 0; i < R->nfiles; i++)
        if (d9_file_failed(&R->files[i]) || R->files[i].status == D9_DEC_TRUNCATED)
            printf("  [%s: %s]", R->files[i].path, d9_file_status_name(&R->files[i]));
    putchar('\n');
    printf("  time           %s", NS(r->duration_ns));
    if (r->duration_ns)
        printf("  (%" PRIu64 " .. %" PRIu64 " ns", r->start_ns, r->end_ns);
    if (r->duration_ns && wall_time(r, r->start_ns, w1, sizeof w1)) printf(", from %s", w1);
    if (r->duration_ns) putchar(')');
    if (r->windowed)
        printf("  [--from/--to: +%.6f s .. +%.6f s of %s]", rel_s(r, r->start_ns),
               rel_s(r, r->end_ns), NS(r->trace_last_ns - r->trace_first_ns));
    putchar('\n');
    printf("  workers        %zu", r->nworkers);
    for (size_t i = 0; i < r->nworkers; i++) printf("%s%" PRIu64, i ? ", " : " (", r->workers[i].id);
    printf("%s\n", r->nworkers ? ")" : "");
    printf("  events         %" PRIu64 ": polls %" PRIu64 ", parks %" PRIu64 ", wakes %" PRIu64
           ", spawns %" PRIu64 ", terminations %" PRIu64 ", CPU samples %" PRIu64
           ", off-CPU samples %" PRIu64 ", sched switches %" PRIu64 ", task dumps %" PRIu64
           ", queue samples %" PRIu64 ", symbols %" PRIu64 ", other %" PRIu64 "\n",
           r->events, r->counts.poll_starts, r->counts.parks, r->counts.wakes, r->counts.spawns,
           r->counts.terminates, r->counts.cpu_samples, r->counts.offcpu_samples,
           r->counts.sched_switches, r->counts.task_dumps, r->counts.queue_samples,
           r->counts.symbols, r->counts.other);
    if (r->dropped == 0) {
        printf("  dropped        none\n");
    } else {
        printf("  dropped        %" PRIu64 " events (", r->dropped);
        for (size_t i = 0; i < r->ndrops; i++)
            printf("%s%s %" PRIu64, i ? ", " : "", r->drops_by_reason[i].name, r->drops_by_reason[i].count);
        printf(")\n");
    }
    printf("  data sources  ");
    for (size_t i = 0; i < r->nsources; i++)
        if (r->sources[i].active) printf(" %s", r->sources[i].name);
    putchar('\n');
    bool any_missing = false;
    for (size_t i = 0; i < r->nsources; i++) {
        const d9a_source *s = &r->sources[i];
        if (s->active) continue;
        if (!any_missing) printf("  not in trace  ");
        any_missing = true;
        printf(" %s", s->name);
        if (s->declared) printf(" (%s)", s->declared);
    }
    if (any_missing) putchar('\n');
    if (r->late_records || r->unresolved_refs)
        printf("  data quality   %" PRIu64 " records out of order beyond the window, %" PRIu64
               " unresolved pool references\n",
               r->late_records, r->unresolved_refs);
}

static void text_flags(const render *R) {
    const d9a_report *r = R->r;
    printf("\nRED FLAGS\n");
    if (r->nflags == 0) {
        printf("  none\n");
        return;
    }
    for (size_t i = 0; i < r->nflags; i++) {
        const d9a_flag *f = &r->flags[i];
        char sev[16];
        snprintf(sev, sizeof sev, "%s", d9a_severity_name(f->severity));
        for (char *p = sev; *p; p++) *p = (char)(*p - 32 * (*p >= 'a' && *p <= 'z'));
        printf("  %-8s  %-17s %s\n", sev, f->code, f->title);
        const char *indent = "                              ";
        if (f->evidence[0]) print_wrapped(indent, "", f->evidence);
        if (f->hint[0]) print_wrapped(indent, "-> ", f->hint);
    }
}

static void text_workers(const render *R) {
    const d9a_report *r = R->r;
    printf("\nWORKER UTILIZATION (busy = time in polls)\n");
    if (r->nworkers == 0) {
        printf("  no worker events\n");
        return;
    }
    printf("  %6s  %8s  %11s  %6s  %7s  %11s  %7s  %8s  %10s  %10s  %11s\n", "worker", "polls",
           "poll time", "busy", "parks", "park time", "parked", "cpu/wall", "sched p99",
           "sched max", "queued+idle");
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        char ratio[16] = "-";
        if (w->cpu_ratio >= 0) snprintf(ratio, sizeof ratio, "%.2f", w->cpu_ratio);
        printf("  %6" PRIu64 "  %8" PRIu64 "  %11s  %5.1f%%  %7" PRIu64 "  %11s  %6.1f%%  %8s  %10s  "
               "%10s  %11" PRIu64 "\n",
               w->id, w->polls, NS(w->poll_ns), w->busy_pct, w->parks, NS(w->park_ns),
               w->parked_pct, ratio, w->sched_wait.count ? NS(w->sched_wait.p99) : "-",
               w->sched_wait.count ? NS(w->sched_wait.max) : "-", w->polls_with_queue_while_parked);
    }
    printf("  cpu/wall: CPU time over wall time from unpark to park (below 1: off-CPU while "
           "busy); queued+idle: polls started with a queue while another worker was parked\n");
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        if (w->offcpu_in_poll_ns)
            printf("  worker %" PRIu64 ": off-CPU inside polls %s (preempted %s)\n", w->id,
                   NS(w->offcpu_in_poll_ns), NS(w->preempted_in_poll_ns));
    }
}

static void text_long_polls(const render *R) {
    const d9a_report *r = R->r;
    printf("\nLONG POLLS (top %zu of %" PRIu64 " polls; p50 %s, p90 %s, p99 %s, max %s; %" PRIu64
           " > %s, %" PRIu64 " > %s)\n",
           r->nlong_polls, r->polls.count, NS(r->polls.p50), NS(r->polls.p90), NS(r->polls.p99),
           NS(r->polls.max), r->polls_over_warn, NS(R->opt->long_poll_warn_ns), r->polls_over_crit,
           NS(R->opt->long_poll_crit_ns));
    if (r->nlong_polls == 0) {
        printf("  no polls\n");
        return;
    }
    printf("  %3s  %11s  %6s  %8s  %13s  %s\n", "#", "duration", "worker", "task", "start",
           "spawn location");
    for (size_t i = 0; i < r->nlong_polls; i++) {
        const d9a_long_poll *p = &r->long_polls[i];
        printf("  %3zu  %11s  %6" PRIu64 "  %#8" PRIx64 "  %+12.6fs  %s\n", i + 1, NS(p->duration_ns),
               p->worker, p->task, rel_s(r, p->start_ns), p->location);
        if (p->offcpu_ns)
            printf("       off-CPU %s of it (preempted %s)\n", NS(p->offcpu_ns), NS(p->preempted_ns));
        if (p->cpu_samples + p->offcpu_samples == 0) continue;
        printf("       samples inside: %" PRIu64 " CPU, %" PRIu64 " off-CPU\n", p->cpu_samples,
               p->offcpu_samples);
        for (size_t g = 0; g < p->ngroups && g < 3; g++) {
            const d9a_poll_sample_group *grp = &p->groups[g];
            if (!grp->stack) continue;
            printf("       %" PRIu64 " %s in %s%s", grp->count, grp->source ? "off-CPU" : "CPU",
                   grp->stack->function, grp->stack->preempted ? " (preempted)" : "");
            if (grp->est_ns) printf(", off-CPU up to %s", NS(grp->est_ns));
            if (grp->stack->syscall) printf(", in %s()", grp->stack->syscall);
            if (grp->stack->app_frame) printf("  <- app: %s", grp->stack->app_frame);
            putchar('\n');
            print_stack(R, grp->stack, "           ", grp->source != 0);
        }
        if (p->ngroups > 3) printf("       ... %zu more stacks (--json has them)\n", p->ngroups - 3);
    }
}

static void text_sched(const render *R) {
    const d9a_report *r = R->r;
    printf("\nKERNEL SCHEDULING DELAYS (sched_wait_ns on unpark: runnable but not running)\n");
    if (r->sched_wait.count == 0) {
        printf("  no data (unpark events carry no sched_wait_ns)\n");
        return;
    }
    printf("  %" PRIu64 " unparks: p50 %s, p90 %s, p99 %s, max %s; %" PRIu64 " > %s, %" PRIu64
           " > %s\n",
           r->sched_wait.count, NS(r->sched_wait.p50), NS(r->sched_wait.p90), NS(r->sched_wait.p99),
           NS(r->sched_wait.max), r->sched_over_warn, NS(R->opt->sched_delay_warn_ns),
           r->sched_over_crit, NS(R->opt->sched_delay_crit_ns));
    if (r->nsched_worst == 0 || r->sched_worst[0].wait_ns == 0) return;
    printf("  %11s  %6s  %8s  %13s\n", "wait", "worker", "tid", "at");
    for (size_t i = 0; i < r->nsched_worst; i++) {
        const d9a_sched_delay *s = &r->sched_worst[i];
        if (s->wait_ns == 0) break;
        printf("  %11s  %6" PRIu64 "  %8" PRIu64 "  %+12.6fs\n", NS(s->wait_ns), s->worker, s->tid,
               rel_s(r, s->ts));
    }
}

static void text_wakes(const render *R) {
    const d9a_report *r = R->r;
    printf("\nWAKE TO POLL DELAYS (a task's wake to its next poll start)\n");
    if (r->wakes == 0) {
        printf("  no wake events\n");
        return;
    }
    printf("  %" PRIu64 " wakes; %" PRIu64 " delays measured: p50 %s, p90 %s, p99 %s, max %s; %" PRIu64
           " > %s; %" PRIu64 " tasks woken but not polled afterwards\n",
           r->wakes, r->wake_delay.count, NS(r->wake_delay.p50), NS(r->wake_delay.p90),
           NS(r->wake_delay.p99), NS(r->wake_delay.max), r->wake_over_warn,
           NS(R->opt->wake_delay_warn_ns), r->wakes_unpolled);
    if (r->nwake_worst == 0) return;
    printf("  %11s  %8s  %13s  %6s  %5s  %s\n", "delay", "task", "woken at", "worker", "wakes",
           "spawn location");
    for (size_t i = 0; i < r->nwake_worst; i++) {
        const d9a_wake_delay *w = &r->wake_worst[i];
        printf("  %11s  %#8" PRIx64 "  %+12.6fs  %6" PRIu64 "  %5" PRIu64 "  %s\n", NS(w->delay_ns),
               w->task, rel_s(r, w->wake_ns), w->worker, w->wakes, w->location);
    }
}

static void text_locations(const render *R) {
    const d9a_report *r = R->r;
    size_t n = 0;
    for (size_t i = 0; i < r->nlocations; i++)
        if (r->locations[i].polls.count) n++;
    size_t shown = n < R->opt->top_n ? n : R->opt->top_n;
    printf("\nPOLL DURATION BY SPAWN LOCATION (top %zu of %zu by total poll time)\n", shown, n);
    if (n == 0) {
        printf("  no polls\n");
        return;
    }
    printf("  %8s  %11s  %10s  %10s  %11s  %7s  %s\n", "polls", "total", "p50", "p99", "max",
           "> warn", "location");
    for (size_t i = 0, k = 0; i < r->nlocations && k < shown; i++) {
        const d9a_location_report *l = &r->locations[i];
        if (!l->polls.count) continue;
        k++;
        printf("  %8" PRIu64 "  %11s  %10s  %10s  %11s  %7" PRIu64 "  %s\n", l->polls.count,
               NS(l->polls.total), NS(l->polls.p50), NS(l->polls.p99), NS(l->polls.max),
               l->polls_over_warn, l->location);
    }
}

static void text_lifecycle(const render *R) {
    const d9a_report *r = R->r;
    printf("\nTASK LIFECYCLE\n");
    if (r->spawned == 0 && r->terminated == 0) {
        printf("  no spawn or terminate events\n");
        return;
    }
    printf("  spawned %" PRIu64 ", terminated %" PRIu64 " (%" PRIu64
           " of them spawned before the analyzed time), alive at the end %" PRIu64
           " (live-task growth over the second half: %+.1f/s)\n",
           r->spawned, r->terminated, r->terminated_unknown, r->live_at_end, r->live_growth_per_s);
    if (r->nlive_series > 1) {
        printf("  live tasks:");
        size_t step = (r->nlive_series + 11) / 12;
        for (size_t i = 0; i < r->nlive_series; i += step)
            printf(" %.2fs=%" PRId64, (double)r->live_series[i].t_ns / 1e9, r->live_series[i].live);
        const d9a_live_point *last = &r->live_series[r->nlive_series - 1];
        if ((r->nlive_series - 1) % step)
            printf(" %.2fs=%" PRId64, (double)last->t_ns / 1e9, last->live);
        putchar('\n');
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
    if (n) printf("  %8s  %10s  %6s  %s\n", "spawned", "terminated", "alive", "spawn location");
    for (size_t i = 0; i < n && i < R->opt->top_n; i++)
        printf("  %8" PRIu64 "  %10" PRIu64 "  %6" PRIu64 "  %s\n", by[i]->spawned, by[i]->terminated,
               by[i]->live, by[i]->location);
    free(by);
}

static void text_groups(const render *R, const d9a_sample_group *g, size_t n, bool offcpu,
                        const char *what) {
    if (n == 0) return;
    printf("  by %s:\n", what);
    if (offcpu)
        printf("  %8s  %8s  %11s  %8s  %s\n", "samples", "in poll", "time (est)", "parked",
               "blocking function");
    else
        printf("  %8s  %8s  %8s  %s\n", "samples", "in poll", "elsewhere", "leaf function");
    for (size_t i = 0; i < n; i++) {
        if (offcpu)
            printf("  %8" PRIu64 "  %8" PRIu64 "  %11s  %8" PRIu64 "  %s%s", g[i].samples,
                   g[i].in_poll, NS(g[i].in_poll_ns), g[i].parked, g[i].function,
                   g[i].preempted ? " (preempted)" : "");
        else
            printf("  %8" PRIu64 "  %8" PRIu64 "  %8" PRIu64 "  %s", g[i].samples, g[i].in_poll,
                   g[i].samples - g[i].in_poll, g[i].function);
        if (g[i].syscall) printf("  [in %s()]", g[i].syscall);
        if (g[i].app_frame) printf("  <- app: %s", g[i].app_frame);
        if (g[i].example_location) printf("  [task from %s]", g[i].example_location);
        putchar('\n');
    }
    (void)R;
}

static void text_stack_groups(const render *R, const d9a_sample_group *g, size_t n, bool offcpu) {
    if (n == 0) return;
    size_t shown = n < 5 ? n : 5;
    printf("  by stack (top %zu, leaf first):\n", shown);
    for (size_t i = 0; i < shown; i++) {
        printf("    #%zu  %" PRIu64 " samples, %" PRIu64 " inside polls: %s", i + 1, g[i].samples,
               g[i].in_poll, g[i].function);
        if (offcpu && g[i].in_poll_ns) printf(", off-CPU in polls up to %s", NS(g[i].in_poll_ns));
        if (offcpu && g[i].parked) printf(" (%" PRIu64 " while parked)", g[i].parked);
        putchar('\n');
        print_stack(R, g[i].stack, "         ", offcpu);
    }
}

static void text_blocking(const render *R) {
    const d9a_report *r = R->r;
    printf("\nBLOCKING CALLS (off-CPU samples: %" PRIu64 "; inside polls %" PRIu64 ", while parked %"
           PRIu64 ", elsewhere %" PRIu64 ")\n",
           r->offcpu_total, r->offcpu_in_poll, r->offcpu_parked, r->offcpu_other);
    printf("  time (est): from each sample inside a poll to the worker's next sample or the end "
           "of the poll (an upper bound)\n");
    if (r->offcpu_total == 0) {
        printf("  no off-CPU (context switch) samples\n");
        return;
    }
    text_groups(R, r->blocking_functions, r->nblocking_functions, true, "blocking function");
    if (r->nblocking_syscalls) {
        printf("  by system call:\n");
        printf("  %8s  %8s  %11s  %8s  %-16s %s\n", "samples", "in poll", "time (est)", "parked",
               "system call", "top blocking function");
        for (size_t i = 0; i < r->nblocking_syscalls; i++) {
            const d9a_sample_group *g = &r->blocking_syscalls[i];
            char call[64];
            snprintf(call, sizeof call, "%s%s", g->syscall ? g->syscall : "(none)", g->syscall ? "()" : "");
            printf("  %8" PRIu64 "  %8" PRIu64 "  %11s  %8" PRIu64 "  %-16s %s\n", g->samples,
                   g->in_poll, NS(g->in_poll_ns), g->parked, call, g->function);
        }
    }
    text_stack_groups(R, r->blocking_stacks, r->nblocking_stacks, true);
    if (r->nlock_waits) {
        printf("\nLOCK CONTENTION (off-CPU samples inside polls waiting for a lock, by the function that took it)\n");
        printf("  %8s  %11s  %11s  %-24s %s\n", "waits", "time (est)", "worst (est)", "lock function",
               "called from");
        for (size_t i = 0; i < r->nlock_waits; i++) {
            const d9a_lock_wait *w = &r->lock_waits[i];
            printf("  %8" PRIu64 "  %11s  %11s  %-24s %s\n", w->samples, NS(w->total_ns), NS(w->worst_ns),
                   w->lock_function, w->app_frame ? w->app_frame : "(unknown)");
        }
    }
}

static void text_cpu(const render *R) {
    const d9a_report *r = R->r;
    printf("\nCPU HOT SPOTS (CPU samples: %" PRIu64 "; inside polls %" PRIu64 ")\n", r->cpu_total,
           r->cpu_in_poll);
    if (r->cpu_total == 0) {
        printf("  no CPU samples\n");
        return;
    }
    text_groups(R, r->cpu_functions, r->ncpu_functions, false, "leaf function");
    text_stack_groups(R, r->cpu_stacks, r->ncpu_stacks, false);
}

static void text_migration(const render *R) {
    const d9a_report *r = R->r;
    printf("\nTASK MIGRATION\n");
    if (r->tasks_polled == 0) {
        printf("  no polls\n");
        return;
    }
    printf("  %" PRIu64 " tasks polled, %" PRIu64 " moved between workers; %" PRIu64 " of %" PRIu64
           " polls ran on another worker than the task's previous poll (%.1f %%), %.1f migrations/s\n",
           r->tasks_polled, r->tasks_migrated, r->migrations, r->migration_polls,
           r->migration_polls ? 100.0 * (double)r->migrations / (double)r->migration_polls : 0.0,
           r->migrations_per_s);
    if (r->ntop_migrating == 0) return;
    printf("  %8s  %6s  %8s  %s\n", "task", "hops", "polls", "spawn location");
    for (size_t i = 0; i < r->ntop_migrating; i++) {
        const d9a_migrating_task *m = &r->top_migrating[i];
        printf("  %#8" PRIx64 "  %6" PRIu64 "  %8" PRIu64 "  %s\n", m->task, m->hops, m->polls,
               m->location ? m->location : "?");
    }
}

static void text_queued(const render *R) {
    const d9a_report *r = R->r;
    printf("\nIDLE WORKERS WHILE WORK WAS QUEUED\n");
    printf("  %" PRIu64 " polls started with local_queue > 0, %" PRIu64
           " of them while another worker was parked; global queue > 0 in %" PRIu64
           " queue samples, %" PRIu64 " of them while a worker was parked\n",
           r->polls_with_queue, r->polls_with_queue_while_parked, r->queue_samples_nonzero,
           r->queue_samples_nonzero_while_parked);
    if (r->nqueued_examples == 0) return;
    printf("  %13s  %6s  %6s  %13s\n", "at", "worker", "queued", "parked worker");
    for (size_t i = 0; i < r->nqueued_examples; i++) {
        const d9a_queued_example *q = &r->queued_examples[i];
        printf("  %+12.6fs  %6" PRIu64 "  %6" PRIu64 "  %13" PRIu64 "\n", rel_s(r, q->ts), q->worker,
               q->local_queue, q->parked_worker);
    }
}

static void print_text(const render *R) {
    text_summary(R);
    text_flags(R);
    text_workers(R);
    text_long_polls(R);
    text_sched(R);
    text_wakes(R);
    text_locations(R);
    text_lifecycle(R);
    text_blocking(R);
    text_cpu(R);
    text_migration(R);
    text_queued(R);
}

/* ------------------------------------------------------------------------------------------
 * JSON (docs/analyze.md)
 * ---------------------------------------------------------------------------------------- */

typedef struct jctx {
    d9_json j;
    const render *R;
    const d9a_stack_view **stacks; /* referenced stacks, written once at the end */
    size_t nstacks, cap;
} jctx;

static void jkey_u64(d9_json *j, const char *k, uint64_t v) {
    d9_json_key(j, k);
    d9_json_u64(j, v);
}

static void jkey_f64(d9_json *j, const char *k, double v) {
    d9_json_key(j, k);
    d9_json_f64(j, v);
}

static void jkey_str(d9_json *j, const char *k, const char *v) {
    d9_json_key(j, k);
    if (v) d9_json_string(j, v);
    else d9_json_null(j);
}

static void jkey_rel(jctx *c, const char *k, uint64_t ts) {
    char key[64];
    jkey_u64(&c->j, k, ts);
    snprintf(key, sizeof key, "%s_rel_s", k);
    jkey_f64(&c->j, key, rel_s(c->R->r, ts));
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
    jkey_u64(j, "count", d->count);
    jkey_u64(j, "total_ns", d->total);
    jkey_u64(j, "min_ns", d->min);
    jkey_u64(j, "p50_ns", d->p50);
    jkey_u64(j, "p90_ns", d->p90);
    jkey_u64(j, "p99_ns", d->p99);
    jkey_u64(j, "max_ns", d->max);
    d9_json_object_end(j);
}

static void jgroups(jctx *c, const char *k, const d9a_sample_group *g, size_t n, bool offcpu) {
    d9_json *j = &c->j;
    d9_json_key(j, k);
    d9_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        d9_json_object_begin(j);
        jkey_str(j, "function", g[i].function);
        jkey_u64(j, "samples", g[i].samples);
        jkey_u64(j, "in_poll", g[i].in_poll);
        if (offcpu) jkey_u64(j, "in_poll_est_ns", g[i].in_poll_ns);
        jkey_u64(j, "parked", g[i].parked);
        jkey_u64(j, "other", g[i].other);
        if (offcpu) {
            d9_json_key(j, "preempted");
            d9_json_bool(j, g[i].preempted);
        }
        jkey_str(j, "app_frame", g[i].app_frame);
        jkey_str(j, "syscall", g[i].syscall);
        jkey_str(j, "example_location", g[i].example_location);
        jstack_ref(c, "stack", g[i].stack);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
}

static void json_summary(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    char w[64];
    d9_json_key(j, "summary");
    d9_json_object_begin(j);
    jkey_u64(j, "start_ns", r->start_ns);
    jkey_u64(j, "end_ns", r->end_ns);
    jkey_u64(j, "duration_ns", r->duration_ns);
    jkey_str(j, "start_wall", wall_time(r, r->start_ns, w, sizeof w) ? w : NULL);
    jkey_u64(j, "trace_first_ns", r->trace_first_ns);
    jkey_u64(j, "trace_last_ns", r->trace_last_ns);
    d9_json_key(j, "windowed");
    d9_json_bool(j, r->windowed);
    jkey_u64(j, "events", r->events);
    d9_json_key(j, "counts");
    d9_json_object_begin(j);
    jkey_u64(j, "poll_starts", r->counts.poll_starts);
    jkey_u64(j, "poll_ends", r->counts.poll_ends);
    jkey_u64(j, "parks", r->counts.parks);
    jkey_u64(j, "unparks", r->counts.unparks);
    jkey_u64(j, "wakes", r->counts.wakes);
    jkey_u64(j, "spawns", r->counts.spawns);
    jkey_u64(j, "terminates", r->counts.terminates);
    jkey_u64(j, "cpu_samples", r->counts.cpu_samples);
    jkey_u64(j, "offcpu_samples", r->counts.offcpu_samples);
    jkey_u64(j, "sched_switches", r->counts.sched_switches);
    jkey_u64(j, "task_dumps", r->counts.task_dumps);
    jkey_u64(j, "queue_samples", r->counts.queue_samples);
    jkey_u64(j, "symbols", r->counts.symbols);
    jkey_u64(j, "drop_events", r->counts.drop_events);
    jkey_u64(j, "worker_registrations", r->counts.worker_registrations);
    jkey_u64(j, "memory_maps", r->counts.memory_maps);
    jkey_u64(j, "other", r->counts.other);
    d9_json_object_end(j);
    d9_json_key(j, "workers");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nworkers; i++) d9_json_u64(j, r->workers[i].id);
    d9_json_array_end(j);
    d9_json_key(j, "dropped");
    d9_json_object_begin(j);
    jkey_u64(j, "total", r->dropped);
    d9_json_key(j, "by_reason");
    d9_json_object_begin(j);
    for (size_t i = 0; i < r->ndrops; i++) jkey_u64(j, r->drops_by_reason[i].name, r->drops_by_reason[i].count);
    d9_json_object_end(j);
    d9_json_object_end(j);
    d9_json_key(j, "sources");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nsources; i++) {
        const d9a_source *s = &r->sources[i];
        d9_json_object_begin(j);
        jkey_str(j, "name", s->name);
        d9_json_key(j, "active");
        d9_json_bool(j, s->active);
        jkey_u64(j, "events", s->events);
        jkey_str(j, "declared", s->declared);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "metadata");
    d9_json_object_begin(j);
    for (size_t i = 0; i < r->nmetadata; i++) jkey_str(j, r->metadata[i].key, r->metadata[i].value);
    d9_json_object_end(j);
    jkey_u64(j, "unmatched_poll_starts", r->unmatched_poll_starts);
    jkey_u64(j, "unmatched_poll_ends", r->unmatched_poll_ends);
    jkey_u64(j, "late_records", r->late_records);
    jkey_u64(j, "unresolved_refs", r->unresolved_refs);
    d9_json_key(j, "symbols_present");
    d9_json_bool(j, r->symbols_present);
    d9_json_key(j, "files");
    d9_json_array_begin(j);
    for (size_t i = 0; i < c->R->nfiles; i++) {
        const d9_file_result *f = &c->R->files[i];
        d9_json_object_begin(j);
        jkey_str(j, "path", f->path);
        jkey_str(j, "status", d9_file_status_name(f));
        jkey_str(j, "message", f->message);
        jkey_u64(j, "events", f->stats.events);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void json_flags(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    d9_json_key(j, "red_flags");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nflags; i++) {
        const d9a_flag *f = &r->flags[i];
        d9_json_object_begin(j);
        jkey_str(j, "severity", d9a_severity_name(f->severity));
        jkey_str(j, "code", f->code);
        jkey_str(j, "title", f->title);
        jkey_str(j, "evidence", f->evidence);
        jkey_str(j, "hint", f->hint);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
}

static void json_workers(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    d9_json_key(j, "workers");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        d9_json_object_begin(j);
        jkey_u64(j, "id", w->id);
        jkey_str(j, "runtime", w->runtime);
        jkey_u64(j, "tid", w->tid);
        jkey_u64(j, "polls", w->polls);
        jkey_u64(j, "poll_ns", w->poll_ns);
        jkey_f64(j, "busy_pct", w->busy_pct);
        jkey_u64(j, "parks", w->parks);
        jkey_u64(j, "park_ns", w->park_ns);
        jkey_f64(j, "parked_pct", w->parked_pct);
        jkey_u64(j, "busy_periods", w->busy_periods);
        jkey_u64(j, "busy_wall_ns", w->busy_wall_ns);
        jkey_u64(j, "busy_cpu_ns", w->busy_cpu_ns);
        d9_json_key(j, "cpu_ratio");
        if (w->cpu_ratio >= 0) d9_json_f64(j, w->cpu_ratio);
        else d9_json_null(j);
        jdist(j, "sched_wait", &w->sched_wait);
        jkey_u64(j, "cpu_samples_in_poll", w->cpu_samples_in_poll);
        jkey_u64(j, "offcpu_samples_in_poll", w->offcpu_samples_in_poll);
        jkey_u64(j, "offcpu_in_poll_ns", w->offcpu_in_poll_ns);
        jkey_u64(j, "preempted_in_poll_ns", w->preempted_in_poll_ns);
        jkey_u64(j, "offcpu_in_poll_est_ns", w->offcpu_in_poll_est_ns);
        jkey_u64(j, "polls_with_queue", w->polls_with_queue);
        jkey_u64(j, "polls_with_queue_while_parked", w->polls_with_queue_while_parked);
        jkey_u64(j, "max_local_queue", w->max_local_queue);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
}

static void json_polls(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    char w[64];
    d9_json_key(j, "polls");
    d9_json_object_begin(j);
    jdist(j, "duration", &r->polls);
    jkey_u64(j, "over_warn", r->polls_over_warn);
    jkey_u64(j, "over_crit", r->polls_over_crit);
    jkey_u64(j, "warn_ns", c->R->opt->long_poll_warn_ns);
    jkey_u64(j, "crit_ns", c->R->opt->long_poll_crit_ns);
    d9_json_key(j, "longest");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlong_polls; i++) {
        const d9a_long_poll *p = &r->long_polls[i];
        d9_json_object_begin(j);
        jkey_u64(j, "duration_ns", p->duration_ns);
        jkey_rel(c, "start_ns", p->start_ns);
        jkey_str(j, "start_wall", wall_time(r, p->start_ns, w, sizeof w) ? w : NULL);
        jkey_u64(j, "worker", p->worker);
        jkey_u64(j, "task", p->task);
        jkey_str(j, "location", p->location);
        jkey_u64(j, "local_queue", p->local_queue);
        jkey_u64(j, "cpu_samples", p->cpu_samples);
        jkey_u64(j, "offcpu_samples", p->offcpu_samples);
        jkey_u64(j, "offcpu_ns", p->offcpu_ns);
        jkey_u64(j, "preempted_ns", p->preempted_ns);
        d9_json_key(j, "samples");
        d9_json_array_begin(j);
        for (size_t g = 0; g < p->ngroups; g++) {
            d9_json_object_begin(j);
            jkey_str(j, "source", p->groups[g].source ? "offcpu" : "cpu");
            jkey_u64(j, "count", p->groups[g].count);
            if (p->groups[g].source) jkey_u64(j, "offcpu_est_ns", p->groups[g].est_ns);
            jkey_str(j, "function", p->groups[g].stack ? p->groups[g].stack->function : NULL);
            jkey_str(j, "app_frame", p->groups[g].stack ? p->groups[g].stack->app_frame : NULL);
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
        jkey_str(j, "location", l->location);
        jdist(j, "duration", &l->polls);
        jkey_u64(j, "over_warn", l->polls_over_warn);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void json_delays(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    d9_json_key(j, "sched_delays");
    d9_json_object_begin(j);
    jdist(j, "wait", &r->sched_wait);
    jkey_u64(j, "over_warn", r->sched_over_warn);
    jkey_u64(j, "over_crit", r->sched_over_crit);
    d9_json_key(j, "worst");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nsched_worst; i++) {
        d9_json_object_begin(j);
        jkey_u64(j, "wait_ns", r->sched_worst[i].wait_ns);
        jkey_rel(c, "ts", r->sched_worst[i].ts);
        jkey_u64(j, "worker", r->sched_worst[i].worker);
        jkey_u64(j, "tid", r->sched_worst[i].tid);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);

    d9_json_key(j, "wake_delays");
    d9_json_object_begin(j);
    jkey_u64(j, "wakes", r->wakes);
    jkey_u64(j, "woken_not_polled", r->wakes_unpolled);
    jdist(j, "delay", &r->wake_delay);
    jkey_u64(j, "over_warn", r->wake_over_warn);
    jkey_u64(j, "over_crit", r->wake_over_crit);
    d9_json_key(j, "worst");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nwake_worst; i++) {
        const d9a_wake_delay *w = &r->wake_worst[i];
        d9_json_object_begin(j);
        jkey_u64(j, "delay_ns", w->delay_ns);
        jkey_rel(c, "wake_ns", w->wake_ns);
        jkey_rel(c, "poll_ns", w->poll_ns);
        jkey_u64(j, "task", w->task);
        jkey_u64(j, "worker", w->worker);
        jkey_str(j, "location", w->location);
        jkey_u64(j, "wakes", w->wakes);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
}

static void json_tasks(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    d9_json_key(j, "tasks");
    d9_json_object_begin(j);
    jkey_u64(j, "spawned", r->spawned);
    jkey_u64(j, "terminated", r->terminated);
    jkey_u64(j, "terminated_unknown", r->terminated_unknown);
    jkey_u64(j, "live_at_end", r->live_at_end);
    jkey_f64(j, "live_growth_per_s", r->live_growth_per_s);
    d9_json_key(j, "live_series");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlive_series; i++) {
        d9_json_object_begin(j);
        jkey_u64(j, "t_ns", r->live_series[i].t_ns);
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
        jkey_str(j, "location", l->location);
        jkey_u64(j, "spawned", l->spawned);
        jkey_u64(j, "terminated", l->terminated);
        jkey_u64(j, "live", l->live);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "migration");
    d9_json_object_begin(j);
    jkey_u64(j, "tasks_polled", r->tasks_polled);
    jkey_u64(j, "tasks_migrated", r->tasks_migrated);
    jkey_u64(j, "repeat_polls", r->migration_polls);
    jkey_u64(j, "migrations", r->migrations);
    jkey_f64(j, "migrations_per_s", r->migrations_per_s);
    d9_json_key(j, "top");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->ntop_migrating; i++) {
        const d9a_migrating_task *m = &r->top_migrating[i];
        d9_json_object_begin(j);
        jkey_u64(j, "task", m->task);
        jkey_u64(j, "hops", m->hops);
        jkey_u64(j, "polls", m->polls);
        jkey_str(j, "location", m->location);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_object_end(j);
    d9_json_object_end(j);
}

static void json_samples(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    d9_json_key(j, "blocking");
    d9_json_object_begin(j);
    jkey_u64(j, "offcpu_samples", r->offcpu_total);
    jkey_u64(j, "in_poll", r->offcpu_in_poll);
    jkey_u64(j, "parked", r->offcpu_parked);
    jkey_u64(j, "other", r->offcpu_other);
    jkey_u64(j, "blocked_in_poll", r->blocked_in_poll);
    jkey_u64(j, "blocked_in_poll_est_ns", r->blocked_in_poll_ns);
    jgroups(c, "by_function", r->blocking_functions, r->nblocking_functions, true);
    jgroups(c, "by_syscall", r->blocking_syscalls, r->nblocking_syscalls, true);
    jgroups(c, "by_stack", r->blocking_stacks, r->nblocking_stacks, true);
    d9_json_object_end(j);
    d9_json_key(j, "lock_contention");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nlock_waits; i++) {
        const d9a_lock_wait *w = &r->lock_waits[i];
        d9_json_object_begin(j);
        jkey_str(j, "app_frame", w->app_frame);
        jkey_str(j, "lock_function", w->lock_function);
        jkey_u64(j, "waits", w->samples);
        jkey_u64(j, "total_est_ns", w->total_ns);
        jkey_u64(j, "worst_est_ns", w->worst_ns);
        jkey_str(j, "example_location", w->example_location);
        jstack_ref(c, "stack", w->stack);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    d9_json_key(j, "cpu");
    d9_json_object_begin(j);
    jkey_u64(j, "cpu_samples", r->cpu_total);
    jkey_u64(j, "in_poll", r->cpu_in_poll);
    jgroups(c, "by_function", r->cpu_functions, r->ncpu_functions, false);
    jgroups(c, "by_stack", r->cpu_stacks, r->ncpu_stacks, false);
    d9_json_object_end(j);
}

static void json_queued(jctx *c) {
    d9_json *j = &c->j;
    const d9a_report *r = c->R->r;
    d9_json_key(j, "queued_while_idle");
    d9_json_object_begin(j);
    jkey_u64(j, "polls_with_queue", r->polls_with_queue);
    jkey_u64(j, "polls_with_queue_while_parked", r->polls_with_queue_while_parked);
    jkey_u64(j, "global_queue_nonzero", r->queue_samples_nonzero);
    jkey_u64(j, "global_queue_nonzero_while_parked", r->queue_samples_nonzero_while_parked);
    d9_json_key(j, "examples");
    d9_json_array_begin(j);
    for (size_t i = 0; i < r->nqueued_examples; i++) {
        const d9a_queued_example *q = &r->queued_examples[i];
        d9_json_object_begin(j);
        jkey_rel(c, "ts", q->ts);
        jkey_u64(j, "worker", q->worker);
        jkey_u64(j, "local_queue", q->local_queue);
        jkey_u64(j, "parked_worker", q->parked_worker);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
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
        jkey_str(j, "function", v->function);
        jkey_str(j, "app_frame", v->app_frame);
        jkey_str(j, "syscall", v->syscall);
        d9_json_key(j, "preempted");
        d9_json_bool(j, v->preempted);
        d9_json_key(j, "frames");
        d9_json_array_begin(j);
        for (uint32_t k = 0; k < v->nframes; k++) {
            const d9a_frame *f = &v->frames[k];
            d9_json_object_begin(j);
            snprintf(hex, sizeof hex, "0x%" PRIx64, f->addr);
            jkey_str(j, "addr", hex);
            jkey_str(j, "symbol", f->symbol);
            jkey_str(j, "file", f->file && f->file[0] ? f->file : NULL);
            d9_json_key(j, "line");
            if (f->file && f->file[0]) d9_json_u64(j, f->line);
            else d9_json_null(j);
            d9_json_key(j, "inlined");
            d9_json_bool(j, f->inlined);
            d9_json_key(j, "kernel");
            d9_json_bool(j, f->kernel);
            jkey_str(j, "object", f->object);
            d9_json_object_end(j);
        }
        d9_json_array_end(j);
        d9_json_object_end(j);
    }
    d9_json_object_end(j);
}

static void print_json(const render *R) {
    jctx c = {.R = R};
    d9_json_init(&c.j, stdout, true);
    d9_json_object_begin(&c.j);
    jkey_u64(&c.j, "version", 1);
    json_summary(&c);
    json_flags(&c);
    json_workers(&c);
    json_polls(&c);
    json_delays(&c);
    json_tasks(&c);
    json_samples(&c);
    json_queued(&c);
    json_stacks(&c);
    d9_json_object_end(&c.j);
    putchar('\n');
    free(c.stacks);
}

/* ------------------------------------------------------------------------------------------ */

static int parse_count(const char *s, size_t min, size_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || *s == '-' || v < min || v > (1ull << 32)) return -1;
    *out = (size_t)v;
    return 0;
}

int d9_cmd_analyze(int argc, char **argv) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},     {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'}, {"top", required_argument, NULL, 'n'},
        {"stack-depth", required_argument, NULL, 'd'},
        {"window", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},     {0, 0, 0, 0},
    };
    d9a_options opt;
    d9a_options_init(&opt);
    bool json = false;
    size_t depth = 16;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'j': json = true; break;
        case 'f':
        case 't':
            if (d9_cli_parse_time_option("analyze", ch == 'f' ? "--from" : "--to", optarg,
                                         ch == 'f' ? &opt.from : &opt.to) != 0)
                return D9_EXIT_USAGE;
            break;
        case 'n':
            if (parse_count(optarg, 1, &opt.top_n) != 0 || opt.top_n > 10000) {
                fprintf(stderr, "dial9 analyze: --top wants a number from 1 to 10000\n");
                return D9_EXIT_USAGE;
            }
            break;
        case 'd':
            if (parse_count(optarg, 1, &depth) != 0) {
                fprintf(stderr, "dial9 analyze: --stack-depth wants a positive number\n");
                return D9_EXIT_USAGE;
            }
            break;
        case 'w':
            if (parse_count(optarg, 1024, &opt.window_records) != 0) {
                fprintf(stderr, "dial9 analyze: --window wants a number >= 1024\n");
                return D9_EXIT_USAGE;
            }
            break;
        case 'h': analyze_usage(stdout); return D9_EXIT_OK;
        default:
            fprintf(stderr, "dial9 analyze: unknown or incomplete option '%s'\n", argv[optind - 1]);
            analyze_usage(stderr);
            return D9_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "dial9 analyze: no PATH given\n");
        analyze_usage(stderr);
        return D9_EXIT_USAGE;
    }
    if (d9_cli_check_window("analyze", &opt.from, &opt.to) != 0) return D9_EXIT_USAGE;
    d9_path_list paths = {0};
    char err[512];
    if (d9_expand_paths(argc - optind, argv + optind, &paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 analyze: %s\n", err);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    if (opt.from.base == D9_TIME_FROM_END || opt.to.base == D9_TIME_FROM_END)
        opt.trace_end_ts = d9_cli_trace_end_ts(&paths);
    d9_file_result *results = calloc(paths.count, sizeof *results);
    d9a_analysis *a = d9a_new(&opt);
    if (!results || !a) {
        fprintf(stderr, "dial9 analyze: out of memory\n");
        free(results);
        d9a_free(a);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    d9a_feeder feeder = {.a = a};
    int rc = d9_read_trace_files(&paths, d9a_feeder_event, &feeder, results);
    const d9a_report *r = d9a_finish(a);
    if (!r) {
        fprintf(stderr, "dial9 analyze: out of memory\n");
        rc = D9_EXIT_DATA;
    } else {
        render R = {r, &opt, paths.count, results, (unsigned)(depth > 4096 ? 4096 : depth)};
        if (json) print_json(&R);
        else print_text(&R);
        fflush(stdout);
    }
    d9_report_file_problems(stderr, "analyze", results, paths.count, true);
    d9a_free(a);
    free(results);
    d9_path_list_free(&paths);
    return rc;
}
