/* Trigger rules: parsing DIAL9_TRIGGERS (flight_rules.h); the collector matches them (flight_rule_check.h). */
#include "core/flight_rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
