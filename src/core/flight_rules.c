/* Trigger rules: parsing DIAL9_TRIGGERS and matching a sealed segment's events (flight_rules.h). */
#include "core/flight_rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/decoder.h"
#include "format/schemas.h"

static void add_error(char *err, size_t errlen, const char *rule, size_t n, const char *why) {
    if (!err || !errlen) return;
    size_t used = strlen(err);
    if (used + 1 >= errlen) return;
    snprintf(err + used, errlen - used, "%sbad rule '%.*s': %s", used ? "; " : "", (int)n, rule, why);
}

/* "poll_ms>20": the threshold in ns, or false. */
static bool parse_threshold(const char *s, size_t n, size_t prefix, uint64_t *ns) {
    if (n <= prefix + 1 || s[prefix] != '>') return false;
    char digits[32];
    size_t len = n - prefix - 1;
    if (len >= sizeof digits) return false;
    memcpy(digits, s + prefix + 1, len);
    digits[len] = 0;
    for (size_t i = 0; i < len; i++)
        if (digits[i] < '0' || digits[i] > '9') return false;
    errno = 0;
    unsigned long long ms = strtoull(digits, NULL, 10);
    if (errno || ms > 86400000ull) return false;
    *ns = (uint64_t)ms * 1000000ull;
    return true;
}

static bool starts(const char *s, size_t n, const char *word) {
    size_t w = strlen(word);
    return n >= w && memcmp(s, word, w) == 0;
}

size_t d9_flight_rules_parse(const char *spec, d9_flight_rules *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = 0;
    size_t bad = 0;
    for (const char *p = spec ? spec : ""; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (*p == ' ' || *p == '\t')) p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        d9_flight_rule r = {0};
        const char *why = NULL;
        if (n == 0) {
            why = NULL; /* an empty item ("a,,b" or a trailing comma): nothing to add */
        } else if (n >= sizeof r.text) {
            why = "too long";
        } else if (starts(p, n, "poll_ms")) {
            r.kind = D9_RULE_POLL_MS;
            if (!parse_threshold(p, n, strlen("poll_ms"), &r.threshold_ns)) why = "expected poll_ms>MILLISECONDS";
        } else if (starts(p, n, "sched_delay_ms")) {
            r.kind = D9_RULE_SCHED_DELAY_MS;
            if (!parse_threshold(p, n, strlen("sched_delay_ms"), &r.threshold_ns))
                why = "expected sched_delay_ms>MILLISECONDS";
        } else if (n == strlen("drops") && starts(p, n, "drops")) {
            r.kind = D9_RULE_DROPS;
        } else if (starts(p, n, "event:")) {
            r.kind = D9_RULE_EVENT;
            if (n == strlen("event:")) why = "expected event:EventName";
        } else {
            why = "unknown rule (known: poll_ms>N, sched_delay_ms>N, drops, event:Name)";
        }
        if (n && why) {
            add_error(err, errlen, p, n, why);
            bad++;
        } else if (n && out->count == D9_FLIGHT_MAX_RULES) {
            add_error(err, errlen, p, n, "too many rules (16 at most)");
            bad++;
        } else if (n) {
            memcpy(r.text, p, n);
            r.text[n] = 0;
            out->rule[out->count++] = r;
        }
        p = end ? end + 1 : p + n + strlen(p + n);
    }
    return bad;
}

void d9_flight_eval_init(d9_flight_eval *ev) { memset(ev, 0, sizeof *ev); }

void d9_flight_eval_free(d9_flight_eval *ev) { d9_u64_map_free(&ev->poll_start); }

typedef struct scan_ctx {
    const d9_flight_rules *rules;
    bool want_polls, want_unparks, want_drops, want_events;
} scan_ctx;

static bool keep_schema(const d9_dec_schema *s, void *ctx) {
    const scan_ctx *k = ctx;
    for (size_t i = 0; k->want_events && i < k->rules->count; i++)
        if (k->rules->rule[i].kind == D9_RULE_EVENT && strcmp(d9_flight_rule_event_name(&k->rules->rule[i]), s->name) == 0) return true;
    switch (s->bind.role) {
    case D9_SCH_POLL_START:
    case D9_SCH_POLL_END:
        return k->want_polls;
    case D9_SCH_WORKER_UNPARK:
        return k->want_unparks;
    case D9_SCH_DROPPED_EVENTS:
        return k->want_drops;
    default:
        return false;
    }
}

static bool field_u64(const d9_event *e, int kf, uint64_t *out) {
    int i = e->schema->bind.field[kf];
    return i >= 0 && d9_value_uint(&e->values[i], out);
}

int64_t d9_flight_rules_scan(d9_flight_eval *ev, const d9_flight_rules *rules, const uint8_t *data, size_t len,
                             d9_flight_hit_fn fn, void *ctx, char *err, size_t errlen) {
    scan_ctx k = {.rules = rules};
    for (size_t i = 0; i < rules->count; i++) {
        switch (rules->rule[i].kind) {
        case D9_RULE_POLL_MS: k.want_polls = true; break;
        case D9_RULE_SCHED_DELAY_MS: k.want_unparks = true; break;
        case D9_RULE_DROPS: k.want_drops = true; break;
        case D9_RULE_EVENT: k.want_events = true; break;
        }
    }
    if (rules->count == 0) return 0;
    d9_decoder *d = d9_dec_open_plain_mem(data, len, NULL, err, errlen);
    if (!d) return -1;
    d9_dec_scan scan = {.keep = keep_schema, .ctx = &k, .skip_plans = true};
    d9_dec_set_scan(d, &scan);
    d9_event e;
    int64_t events = 0;
    while (d9_dec_next(d, &e) > 0) {
        events++;
        uint8_t role = e.schema->bind.role;
        uint64_t worker = 0, v = 0;
        d9_flight_hit hit = {.begin_ns = e.ts_ns, .end_ns = e.ts_ns};
        for (size_t i = 0; i < rules->count; i++) {
            const d9_flight_rule *r = &rules->rule[i];
            hit.rule = r;
            if (r->kind == D9_RULE_POLL_MS && role == D9_SCH_POLL_END && field_u64(&e, D9_KF_WORKER_ID, &worker)) {
                uint64_t *start = d9_u64_map_get(&ev->poll_start, worker);
                if (start && *start <= e.ts_ns && e.ts_ns - *start > r->threshold_ns) {
                    hit.begin_ns = *start;
                    snprintf(hit.what, sizeof hit.what, "PollEndEvent: worker %llu polled %.3f ms",
                             (unsigned long long)worker, (double)(e.ts_ns - *start) / 1e6);
                    fn(&hit, ctx);
                }
            } else if (r->kind == D9_RULE_SCHED_DELAY_MS && role == D9_SCH_WORKER_UNPARK &&
                       field_u64(&e, D9_KF_SCHED_WAIT_NS, &v) && v > r->threshold_ns) {
                hit.begin_ns = e.ts_ns >= v ? e.ts_ns - v : 0;
                snprintf(hit.what, sizeof hit.what, "WorkerUnparkEvent: scheduling delay %.3f ms", (double)v / 1e6);
                fn(&hit, ctx);
            } else if (r->kind == D9_RULE_DROPS && role == D9_SCH_DROPPED_EVENTS && field_u64(&e, D9_KF_COUNT_FIELD, &v) &&
                       v > 0) {
                snprintf(hit.what, sizeof hit.what, "DroppedEventsEvent: %llu events dropped", (unsigned long long)v);
                fn(&hit, ctx);
            } else if (r->kind == D9_RULE_EVENT && strcmp(d9_flight_rule_event_name(r), e.schema->name) == 0) {
                snprintf(hit.what, sizeof hit.what, "%s", e.schema->name);
                fn(&hit, ctx);
            }
        }
        /* after the rules: a PollEnd closes the poll the rules just measured */
        if (role == D9_SCH_POLL_START && field_u64(&e, D9_KF_WORKER_ID, &worker))
            (void)d9_u64_map_put(&ev->poll_start, worker, e.ts_ns);
        else if (role == D9_SCH_POLL_END && field_u64(&e, D9_KF_WORKER_ID, &worker))
            (void)d9_u64_map_remove(&ev->poll_start, worker);
    }
    d9_dec_status st = d9_dec_state(d);
    if (st != D9_DEC_END && st != D9_DEC_TRUNCATED) {
        snprintf(err, errlen, "%s", d9_dec_message(d));
        events = -1;
    }
    d9_dec_close(d);
    return events;
}
