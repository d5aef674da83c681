#include "analysis/rules.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static double rel_s(const d9a_report *r, uint64_t ts) {
    return ts >= r->trace_first_ns ? (double)(ts - r->trace_first_ns) / 1e9 : 0;
}

static void verdict(d9a_rule_result *o, const char *what, uint64_t actual, uint64_t limit,
                    bool at_most) {
    char a[32], l[32];
    o->actual = actual;
    o->ok = at_most ? actual <= limit : actual >= limit;
    if (o->is_ns)
        snprintf(o->reason, sizeof o->reason, "%s %s %s %s", what, d9a_format_ns(a, sizeof a, actual),
                 o->ok ? (at_most ? "<=" : ">=") : (at_most ? ">" : "<"),
                 d9a_format_ns(l, sizeof l, limit));
    else
        snprintf(o->reason, sizeof o->reason, "%s %" PRIu64 " %s %" PRIu64, what, actual,
                 o->ok ? (at_most ? "<=" : ">=") : (at_most ? ">" : "<"), limit);
}

static void where(d9a_rule_result *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void where(d9a_rule_result *o, const char *fmt, ...) {
    size_t n = strlen(o->reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->reason + n, sizeof o->reason - n, fmt, ap);
    va_end(ap);
}

size_t d9a_check_rules(const d9a_report *r, const d9a_rule *rules, size_t n, d9a_rule_result *out) {
    size_t broken = 0;
    for (size_t i = 0; i < n; i++) {
        const d9a_rule *ru = &rules[i];
        d9a_rule_result *o = &out[i];
        memset(o, 0, sizeof *o);
        switch (ru->kind) {
        case D9A_RULE_MAX_POLL:
            o->name = "max-poll-ms";
            o->is_ns = true;
            verdict(o, "longest poll", r->polls.max, ru->limit, true);
            if (!o->ok && r->nlong_polls)
                where(o, " (worker %" PRIu64 ", task %#" PRIx64 " spawned at %s, at +%.6f s)",
                      r->long_polls[0].worker, r->long_polls[0].task, r->long_polls[0].location,
                      rel_s(r, r->long_polls[0].start_ns));
            break;
        case D9A_RULE_MAX_POLL_P99:
            o->name = "max-poll-p99-ms";
            o->is_ns = true;
            verdict(o, "p99 poll duration", r->polls.p99, ru->limit, true);
            if (!o->ok) where(o, " over %" PRIu64 " polls", r->polls.count);
            break;
        case D9A_RULE_MAX_SCHED:
            o->name = "max-sched-delay-ms";
            o->is_ns = true;
            verdict(o, "largest kernel scheduling delay", r->sched_wait.max, ru->limit, true);
            if (!o->ok && r->nsched_worst)
                where(o, " (worker %" PRIu64 ", at +%.6f s)", r->sched_worst[0].worker,
                      rel_s(r, r->sched_worst[0].ts));
            break;
        case D9A_RULE_MAX_SCHED_P99:
            o->name = "max-sched-delay-p99-ms";
            o->is_ns = true;
            verdict(o, "p99 kernel scheduling delay", r->sched_wait.p99, ru->limit, true);
            break;
        case D9A_RULE_MAX_WAKE:
            o->name = "max-wake-delay-ms";
            o->is_ns = true;
            verdict(o, "largest wake-to-poll delay", r->wake_delay.max, ru->limit, true);
            if (!o->ok && r->nwake_worst)
                where(o, " (task %#" PRIx64 " spawned at %s, woken at +%.6f s)", r->wake_worst[0].task,
                      r->wake_worst[0].location, rel_s(r, r->wake_worst[0].wake_ns));
            break;
        case D9A_RULE_MAX_WAKE_P99:
            o->name = "max-wake-delay-p99-ms";
            o->is_ns = true;
            verdict(o, "p99 wake-to-poll delay", r->wake_delay.p99, ru->limit, true);
            break;
        case D9A_RULE_MAX_DROPPED:
            o->name = "max-dropped";
            verdict(o, "dropped events", r->dropped, ru->limit, true);
            for (size_t k = 0; !o->ok && k < r->ndrops; k++)
                where(o, "%s%s %" PRIu64 "%s", k ? ", " : " (", r->drops_by_reason[k].name,
                      r->drops_by_reason[k].count, k + 1 == r->ndrops ? ")" : "");
            break;
        case D9A_RULE_MAX_BLOCKING: {
            o->name = "max-blocking-samples";
            verdict(o, "off-CPU samples inside polls", r->blocked_in_poll, ru->limit, true);
            const d9a_sample_group *g = r->nblocking_functions ? &r->blocking_functions[0] : NULL;
            if (!o->ok && g) {
                where(o, " (top: %s", g->function);
                if (g->app_frame) where(o, " called from %s", g->app_frame);
                where(o, ")");
            }
            break;
        }
        case D9A_RULE_MAX_LIVE_TASKS:
            o->name = "max-live-tasks";
            verdict(o, "tasks alive at the end", r->live_at_end, ru->limit, true);
            break;
        case D9A_RULE_MIN_EVENTS:
            o->name = "min-events";
            verdict(o, "events", r->events, ru->limit, false);
            break;
        case D9A_RULE_REQUIRE_SOURCE: {
            o->name = "require-source";
            const d9a_source *s = NULL;
            for (size_t k = 0; k < r->nsources; k++)
                if (ru->source && !strcmp(r->sources[k].name, ru->source)) s = &r->sources[k];
            o->ok = s && s->active;
            o->actual = s ? s->events : 0;
            snprintf(o->reason, sizeof o->reason, "data source %s %s", ru->source ? ru->source : "?",
                     !s ? "is unknown" : s->active ? "is present" : "is missing");
            if (s && s->declared) where(o, " (%s)", s->declared);
            break;
        }
        case D9A_RULE_FAIL_ON: {
            o->name = "fail-on";
            const d9a_flag *worst = NULL;
            size_t count = 0;
            for (size_t k = 0; k < r->nflags; k++)
                if ((uint64_t)r->flags[k].severity >= ru->limit) {
                    if (!worst) worst = &r->flags[k];
                    count++;
                }
            o->ok = worst == NULL;
            o->actual = count;
            if (worst)
                snprintf(o->reason, sizeof o->reason, "%zu red flag(s) at %s or above; first: %s %s: %s",
                         count, d9a_severity_name((d9a_severity)ru->limit),
                         d9a_severity_name(worst->severity), worst->code, worst->title);
            else
                snprintf(o->reason, sizeof o->reason, "no red flag at %s or above",
                         d9a_severity_name((d9a_severity)ru->limit));
            break;
        }
        }
        if (!o->ok) broken++;
    }
    return broken;
}
