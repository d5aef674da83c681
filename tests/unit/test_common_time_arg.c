/* src/common/time_arg: the one grammar of --from/--to. Every form (units, fractions, from
 * the start, from the end, absolute), the refusals (a bare number, signs, spaces, unknown
 * units, overflow, garbage, empty) with messages that name the accepted forms, resolution
 * against a trace's range (saturating), and the empty-window rule. */
#include <stdbool.h>
#include <stdint.h>

#include "check.h"

#include "common/time_arg.h"

static bool parses(const char *s, d9_time_base base, uint64_t ns) {
    d9_time_arg t = {0};
    char err[256] = "";
    int rc = d9_time_arg_parse(s, &t, err, sizeof err);
    if (rc != 0) fprintf(stderr, "\"%s\" refused: %s\n", s, err);
    return rc == 0 && t.set && t.base == base && t.ns == ns && err[0] == '\0';
}

/* refused, with a message that contains `want` and leaves *out alone */
static bool refused(const char *s, const char *want) {
    d9_time_arg t = {.set = false, .base = D9_TIME_FROM_END, .ns = 777};
    char err[256] = "";
    int rc = d9_time_arg_parse(s, &t, err, sizeof err);
    bool ok = rc != 0 && !t.set && t.ns == 777 && strstr(err, want) != NULL;
    if (!ok) fprintf(stderr, "\"%s\": rc %d, message \"%s\" (wanted \"%s\")\n", s ? s : "(null)", rc, err, want);
    return ok;
}

static void test_forms(void) {
    CHECK(parses("5s", D9_TIME_FROM_START, 5000000000ull));
    CHECK(parses("250ms", D9_TIME_FROM_START, 250000000ull));
    CHECK(parses("10us", D9_TIME_FROM_START, 10000ull));
    CHECK(parses("10\xc2\xb5s", D9_TIME_FROM_START, 10000ull)); /* µs */
    CHECK(parses("42ns", D9_TIME_FROM_START, 42ull));
    CHECK(parses("2m", D9_TIME_FROM_START, 120000000000ull));
    CHECK(parses("2min", D9_TIME_FROM_START, 120000000000ull));
    CHECK(parses("1h", D9_TIME_FROM_START, 3600000000000ull));
    CHECK(parses("1.5s", D9_TIME_FROM_START, 1500000000ull));
    CHECK(parses(".5ms", D9_TIME_FROM_START, 500000ull));
    CHECK(parses("5.s", D9_TIME_FROM_START, 5000000000ull));
    CHECK(parses("0s", D9_TIME_FROM_START, 0));
    CHECK(parses("1.5ns", D9_TIME_FROM_START, 2)); /* rounded to whole ns */
    CHECK(parses("0.000000001s", D9_TIME_FROM_START, 1));
    CHECK(parses("-15m", D9_TIME_FROM_END, 900000000000ull));
    CHECK(parses("-500ms", D9_TIME_FROM_END, 500000000ull));
    CHECK(parses("-0s", D9_TIME_FROM_END, 0));
    CHECK(parses("@503226032430072", D9_TIME_ABSOLUTE, 503226032430072ull));
    CHECK(parses("@0", D9_TIME_ABSOLUTE, 0));
    CHECK(parses("@18446744073709551615", D9_TIME_ABSOLUTE, UINT64_MAX));
    CHECK(parses("@503226.5s", D9_TIME_ABSOLUTE, 503226500000000ull));
    CHECK(parses("@42ns", D9_TIME_ABSOLUTE, 42));
    /* the largest: exactly 2^64 - 1 ns */
    CHECK(parses("18446744073709551615ns", D9_TIME_FROM_START, UINT64_MAX));
}

static void test_refusals(void) {
    /* a bare number: the one thing the commands used to read differently */
    CHECK(refused("5", "needs a unit"));
    CHECK(refused("5", "5s, 250ms, 10us, 1h"));
    CHECK(refused("5", "-15m"));
    CHECK(refused("5", "@NS"));
    CHECK(refused("-5", "needs a unit"));
    CHECK(refused("0", "needs a unit"));
    CHECK(refused("1.5", "needs a unit"));
    CHECK(refused("@1.5", "whole ns"));
    /* empty, garbage */
    CHECK(refused("", "empty"));
    CHECK(refused(NULL, "empty"));
    CHECK(refused("x", "not a time"));
    CHECK(refused("s", "not a time"));
    CHECK(refused(".s", "not a time"));
    CHECK(refused("-", "not a time"));
    CHECK(refused("@", "not a time"));
    CHECK(refused("@-5s", "not a time"));
    CHECK(refused("--5s", "not a time"));
    CHECK(refused("+5s", "not a time"));
    CHECK(refused(" 5s", "not a time"));
    CHECK(refused("-@5", "not a time"));
    CHECK(refused("1e3s", "unknown unit"));
    CHECK(refused("5 s", "unknown unit"));
    CHECK(refused("5s ", "unknown unit"));
    CHECK(refused("5sec", "unknown unit"));
    CHECK(refused("5S", "unknown unit"));
    CHECK(refused("5ms5", "unknown unit"));
    CHECK(refused("1.2.3s", "unknown unit"));
    CHECK(refused("0x10s", "unknown unit"));
    CHECK(refused("5d", "unknown unit"));
    /* overflow */
    CHECK(refused("18446744073709551616ns", "too large"));
    CHECK(refused("@18446744073709551616", "too large"));
    CHECK(refused("99999999999999999999999999s", "too large"));
    CHECK(refused("5124096h", "too large")); /* 5124096 h > 2^64 ns */
    CHECK(refused("-18446744074s", "too large"));
    /* a long argument is cut in the message, not overrun */
    char big[3000];
    memset(big, '7', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(refused(big, "too large"));
    /* a NULL err is allowed */
    d9_time_arg t;
    CHECK(d9_time_arg_parse("5", &t, NULL, 0) != 0);
}

static void test_duration(void) {
    uint64_t ns = 0;
    CHECK(d9_parse_duration("1.5s", &ns) == 0 && ns == 1500000000ull);
    CHECK(d9_parse_duration("350us", &ns) == 0 && ns == 350000);
    CHECK(d9_parse_duration("42", &ns) != 0);   /* a unit is required here too */
    CHECK(d9_parse_duration("-1s", &ns) != 0);  /* a duration has no sign */
    CHECK(d9_parse_duration("@1s", &ns) != 0);
    CHECK(d9_parse_duration("", &ns) != 0);
    CHECK(d9_parse_duration(NULL, &ns) != 0);
    CHECK(d9_parse_duration("99999999999h", &ns) != 0);
}

static void test_resolve(void) {
    const uint64_t first = 1000000000000ull, last = first + 4810000000ull; /* a 4.81 s trace */
    d9_time_arg t;
    CHECK(d9_time_arg_parse("1s", &t, NULL, 0) == 0);
    CHECK_EQ_U64(d9_time_arg_resolve(&t, first, last), first + 1000000000ull);
    CHECK(d9_time_arg_parse("-1s", &t, NULL, 0) == 0);
    CHECK_EQ_U64(d9_time_arg_resolve(&t, first, last), last - 1000000000ull);
    CHECK(d9_time_arg_parse("-0s", &t, NULL, 0) == 0);
    CHECK_EQ_U64(d9_time_arg_resolve(&t, first, last), last);
    CHECK(d9_time_arg_parse("@123", &t, NULL, 0) == 0);
    CHECK_EQ_U64(d9_time_arg_resolve(&t, first, last), 123);
    /* saturating at both ends */
    CHECK(d9_time_arg_parse("-1h", &t, NULL, 0) == 0);
    CHECK_EQ_U64(d9_time_arg_resolve(&t, 5, 1000), 0);
    CHECK(d9_time_arg_parse("18446744073709551615ns", &t, NULL, 0) == 0);
    CHECK_EQ_U64(d9_time_arg_resolve(&t, first, last), UINT64_MAX);
}

static void test_empty_window(void) {
    d9_time_arg from = {0}, to = {0};
    CHECK(!d9_time_window_empty(&from, &to)); /* nothing given */
    d9_time_arg_parse("2s", &from, NULL, 0);
    CHECK(!d9_time_window_empty(&from, &to)); /* no --to */
    d9_time_arg_parse("1s", &to, NULL, 0);
    CHECK(d9_time_window_empty(&from, &to));
    d9_time_arg_parse("2s", &to, NULL, 0);
    CHECK(d9_time_window_empty(&from, &to)); /* [2s, 2s) is empty */
    d9_time_arg_parse("3s", &to, NULL, 0);
    CHECK(!d9_time_window_empty(&from, &to));
    d9_time_arg_parse("-1s", &from, NULL, 0);
    d9_time_arg_parse("-2s", &to, NULL, 0);
    CHECK(d9_time_window_empty(&from, &to)); /* 2 s before the end is before 1 s before it */
    d9_time_arg_parse("-0s", &to, NULL, 0);
    CHECK(!d9_time_window_empty(&from, &to));
    d9_time_arg_parse("1s", &to, NULL, 0);
    CHECK(!d9_time_window_empty(&from, &to)); /* different bases: only the trace can tell */
    d9_time_arg_parse("@100", &from, NULL, 0);
    d9_time_arg_parse("@100", &to, NULL, 0);
    CHECK(d9_time_window_empty(&from, &to));
}

/* What a window holds, the rule of analyze, check and export (d9_time_window_*). */
static void test_window_rule(void) {
    d9_time_arg none = {0}, from, to;
    d9_time_window w;
    char err[200];
    /* no --from/--to: everything from the first timestamp on, the last one included */
    CHECK(d9_time_window_resolve(&none, &none, 1000, 5000, &w, err, sizeof err) == 0);
    CHECK(d9_time_window_holds(&w, 1000) && d9_time_window_holds(&w, 5000));
    CHECK(!d9_time_window_holds(&w, 999));
    /* [from, to): from inclusive, to exclusive, relative to the first timestamp */
    d9_time_arg_parse("1us", &from, NULL, 0);
    d9_time_arg_parse("3us", &to, NULL, 0);
    CHECK(d9_time_window_resolve(&from, &to, 1000, 5000, &w, err, sizeof err) == 0);
    CHECK_EQ_U64(w.from, 2000);
    CHECK_EQ_U64(w.to, 4000);
    CHECK(d9_time_window_holds(&w, 2000) && d9_time_window_holds(&w, 3999));
    CHECK(!d9_time_window_holds(&w, 4000) && !d9_time_window_holds(&w, 1999));
    /* the last timestamp is still in a window that starts there */
    d9_time_arg_parse("@5000", &from, NULL, 0);
    CHECK(d9_time_window_resolve(&from, &none, 1000, 5000, &w, err, sizeof err) == 0);
    /* past the end: refused, naming --from */
    d9_time_arg_parse("1h", &from, NULL, 0);
    CHECK(d9_time_window_resolve(&from, &none, 1000, 5000, &w, err, sizeof err) != 0);
    CHECK(strstr(err, "--from is") && strstr(err, "after the trace's end"));
    /* --to at the first timestamp holds nothing: refused, naming --to */
    d9_time_arg_parse("@1000", &to, NULL, 0);
    CHECK(d9_time_window_resolve(&none, &to, 1000, 5000, &w, err, sizeof err) != 0);
    CHECK(strstr(err, "--to is") && strstr(err, "before the trace's start"));
    /* mixed bases that cross: refused */
    d9_time_arg_parse("3us", &from, NULL, 0);
    d9_time_arg_parse("-3us", &to, NULL, 0);
    CHECK(d9_time_window_resolve(&from, &to, 1000, 5000, &w, err, sizeof err) != 0);
    CHECK(strstr(err, "--to is not after --from") != NULL);
    /* a window resolved early, judged once the trace's end is known */
    w = (d9_time_window){6000, UINT64_MAX};
    CHECK(d9_time_window_check(&w, 1000, 5000, err, sizeof err) != 0);
    w = (d9_time_window){0, UINT64_MAX};
    CHECK(d9_time_window_check(&w, 1000, 5000, err, sizeof err) == 0);
}

int main(void) {
    test_forms();
    test_window_rule();
    test_refusals();
    test_duration();
    test_resolve();
    test_empty_window();
    return d9t_summary("test_common_time_arg");
}
