/* Time arguments (see time_arg.h). */
#include "common/time_arg.h"

#include <stdio.h>
#include <string.h>

#include "common/round.h"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The digits and fraction of s, exactly for the integer part (timestamps exceed a double's
 * 53 bits); *rest points past them. -1 when there is no digit or the integer overflows. */
static int parse_number(const char *s, uint64_t *whole, double *frac, const char **rest) {
    const char *p = s;
    bool digits = false;
    *whole = 0;
    *frac = 0;
    while (is_digit(*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (*whole > (UINT64_MAX - d) / 10) return -1;
        *whole = *whole * 10 + d;
        p++;
        digits = true;
    }
    if (*p == '.') {
        p++;
        double scale = 0.1;
        while (is_digit(*p)) {
            *frac += (*p - '0') * scale;
            scale /= 10;
            p++;
            digits = true;
        }
    }
    *rest = p;
    return digits ? 0 : -1;
}

static const struct {
    const char *unit;
    uint64_t mult;
} units[] = {{"ns", 1},           {"us", 1000},          {"\xc2\xb5s", 1000},   {"ms", 1000000},
             {"s", 1000000000ull}, {"m", 60000000000ull}, {"min", 60000000000ull},
             {"h", 3600000000000ull}};

/* whole.frac * mult, 0 or -1 on overflow (frac is in [0, 1], mult at most 3.6e12 ns) */
static int scale(uint64_t whole, double frac, uint64_t mult, uint64_t *ns) {
    if (whole > UINT64_MAX / mult) return -1;
    double f = frac * (double)mult;
    uint64_t fi = d9_round_u64(f);
    if (whole * mult > UINT64_MAX - fi) return -1;
    *ns = whole * mult + fi;
    return 0;
}

int d9_parse_duration(const char *s, uint64_t *ns) {
    if (!s || (!is_digit(*s) && *s != '.')) return -1;
    uint64_t whole;
    double frac;
    const char *unit;
    if (parse_number(s, &whole, &frac, &unit) != 0) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(unit, units[i].unit) == 0) return scale(whole, frac, units[i].mult, ns);
    return -1;
}

int d9_time_arg_parse(const char *s, d9_time_arg *out, char *err, size_t errlen) {
    char scratch[1];
    if (!err) {
        err = scratch;
        errlen = sizeof scratch;
    }
    if (!s || !*s) {
        snprintf(err, errlen, "an empty time: use %s", D9_TIME_ARG_FORMS);
        return -1;
    }
    d9_time_base base = *s == '-' ? D9_TIME_FROM_END : *s == '@' ? D9_TIME_ABSOLUTE : D9_TIME_FROM_START;
    const char *num = base == D9_TIME_FROM_START ? s : s + 1;
    uint64_t whole, ns;
    double frac;
    const char *unit;
    if (parse_number(num, &whole, &frac, &unit) != 0) {
        bool overflow = is_digit(*num); /* digits that did not fit */
        snprintf(err, errlen, "\"%.64s\": %s: use %s", s, overflow ? "too large" : "not a time",
                 D9_TIME_ARG_FORMS);
        return -1;
    }
    if (!*unit) {
        if (base != D9_TIME_ABSOLUTE) {
            snprintf(err, errlen, "\"%.64s\": a time needs a unit: use %s", s, D9_TIME_ARG_FORMS);
            return -1;
        }
        if (frac != 0 || strchr(num, '.')) { /* @NS is whole nanoseconds */
            snprintf(err, errlen, "\"%.64s\": @ and a number is whole ns: use %s", s, D9_TIME_ARG_FORMS);
            return -1;
        }
        *out = (d9_time_arg){.set = true, .base = base, .ns = whole};
        return 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].unit) != 0) continue;
        if (scale(whole, frac, units[i].mult, &ns) != 0) {
            snprintf(err, errlen, "\"%.64s\": too large (at most 2^64 ns, 584 years)", s);
            return -1;
        }
        *out = (d9_time_arg){.set = true, .base = base, .ns = ns};
        return 0;
    }
    snprintf(err, errlen, "\"%.64s\": unknown unit \"%.16s\": use %s", s, unit, D9_TIME_ARG_FORMS);
    return -1;
}

uint64_t d9_time_arg_resolve(const d9_time_arg *t, uint64_t first_ts, uint64_t last_ts) {
    switch (t->base) {
    case D9_TIME_ABSOLUTE: return t->ns;
    case D9_TIME_FROM_END: return t->ns > last_ts ? 0 : last_ts - t->ns;
    case D9_TIME_FROM_START: break;
    }
    return t->ns > UINT64_MAX - first_ts ? UINT64_MAX : first_ts + t->ns;
}

bool d9_time_window_empty(const d9_time_arg *from, const d9_time_arg *to) {
    if (!from->set || !to->set || from->base != to->base) return false;
    return from->base == D9_TIME_FROM_END ? to->ns >= from->ns : to->ns <= from->ns;
}

int d9_time_window_resolve(const d9_time_arg *from, const d9_time_arg *to, uint64_t first_ts,
                           uint64_t last_ts, d9_time_window *out, char *err, size_t errlen) {
    out->from = from->set ? d9_time_arg_resolve(from, first_ts, last_ts) : first_ts;
    out->to = to->set ? d9_time_arg_resolve(to, first_ts, last_ts) : UINT64_MAX;
    return d9_time_window_check(out, first_ts, last_ts, err, errlen);
}

int d9_time_window_check(const d9_time_window *out, uint64_t first_ts, uint64_t last_ts, char *err,
                         size_t errlen) {
    if (out->from <= last_ts && out->to > first_ts && out->to > out->from) return 0;
    /* say which end is wrong */
    double span = (double)(last_ts - first_ts) / 1e9;
    if (out->from > last_ts)
        snprintf(err, errlen, "empty time window: --from is %.3f s after the trace's end (it lasts %.3f s)",
                 (double)(out->from - last_ts) / 1e9, span);
    else if (out->to <= first_ts)
        snprintf(err, errlen, "empty time window: --to is %.3f s before the trace's start",
                 (double)(first_ts - out->to) / 1e9);
    else
        snprintf(err, errlen, "empty time window: --to is not after --from");
    return -1;
}
