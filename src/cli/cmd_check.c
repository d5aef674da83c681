/* `dial9 check [--json] [--max-poll-ms X] ... PATH...`: the analyses of `dial9 analyze` as
 * pass/fail rules for CI and canaries. Exit 0 when every rule holds, 1 when one breaks (one
 * line per broken rule says why) or the trace cannot be read, 2 on usage errors. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h> /* isfinite: a macro, no libm */
#include <stdlib.h>
#include <string.h>

#include "analysis/upload_loss.h"
#include "analysis/analysis.h"
#include "analysis/rules.h"
#include "cli/analysis_run.h"
#include "cli/cli.h"
#include "cli/text_escape.h"
#include "common/plain_number.h"
#include "common/json_writer.h"
#include "common/round.h"
#include "format/trace_paths.h"
#include "cli/time_options.h"
#include "cli/trace_reader.h"

static void check_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 check [--json] [RULE...] [--from T] [--to T] PATH...\n"
            "\n"
            "Analyze a trace like `dial9 analyze` and test rules on it. Each rule prints one\n"
            "line (ok/FAIL and why).\n"
            "\n"
            "rules (durations in milliseconds, fractions allowed):\n"
            "  --max-poll-ms X             the longest poll is at most X ms\n"
            "  --max-poll-p99-ms X         the p99 poll duration is at most X ms\n"
            "  --max-sched-delay-ms X      no kernel scheduling delay (sched_wait_ns) above X ms\n"
            "  --max-sched-delay-p99-ms X  ... p99 at most X ms\n"
            "  --max-wake-delay-ms X       no wake-to-poll delay above X ms\n"
            "  --max-wake-delay-p99-ms X   ... p99 at most X ms\n"
            "  --max-dropped N             at most N events dropped by the recorder\n"
            "  --max-blocking-samples N    at most N off-CPU samples inside polls (blocking calls)\n"
            "  --max-live-tasks N          at most N tasks alive at the end\n"
            "  --min-events N              at least N events (catches empty traces)\n"
            "  --require-source NAME       the trace has data source NAME (cpu_profile,\n"
            "                              context_switches, schedstat, symbols, ...; repeatable)\n"
            "  --fail-on SEVERITY          no red flag of SEVERITY or worse: warning, critical,\n"
            "                              or never. Default: critical when no other rule is given\n"
            "\n"
            "  --json                      one JSON object: {\"ok\":..., \"rules\":[...], ...}\n"
            "  --from T, --to T            check [T1, T2) only: 5s, 250ms, 1h (since the start),\n"
            "                              -15m (before the end), @NS (absolute), as in analyze\n"
            "                              (polls and parks by their start; a window outside\n"
            "                              the trace is refused)\n"
            "  --window N                  records and span marks kept for time ordering\n"
            "                              (default 524288)\n"
            "  -h, --help\n"
            "\n"
            D9_CLI_S3_INPUT_HELP
            "Exit status: 0 every rule holds, 1 a rule broke or a file could not be read or\n"
            "decoded, 2 usage error.\n");
}

/* Milliseconds (fractions allowed) to ns. */
static int parse_ms(const char *s, uint64_t *ns) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || v < 0 || v > 1e12) return -1;
    *ns = d9_round_u64(v * 1e6); /* at most 1e18: in range */
    return 0;
}

static int parse_u64(const char *s, uint64_t *out) { return d9_plain_u64(s, 0, UINT64_MAX, out) ? 0 : -1; }

enum {
    OPT_JSON = 256, OPT_FROM, OPT_TO, OPT_WINDOW, OPT_FAIL_ON, OPT_REQUIRE,
    OPT_RULE_BASE = 512, /* + d9a_rule_kind */
};

static void print_json(const d9a_rule_result *res, size_t n, size_t broken, bool readable,
                       const d9_file_result *files, size_t nfiles, const d9a_report *r) {
    d9_json j;
    d9_json_init(&j, stdout, true);
    d9_json_object_begin(&j);
    d9_json_key(&j, "ok");
    d9_json_bool(&j, broken == 0 && readable);
    d9_json_key(&j, "broken");
    d9_json_u64(&j, broken + !readable);
    d9_json_key(&j, "rules");
    d9_json_array_begin(&j);
    if (!readable) {
        d9_json_object_begin(&j);
        d9_json_key(&j, "rule");
        d9_json_string(&j, "readable");
        d9_json_key(&j, "ok");
        d9_json_bool(&j, false);
        d9_json_key(&j, "reason");
        d9_json_string(&j, "a trace file could not be read or decoded completely");
        d9_json_object_end(&j);
    }
    for (size_t i = 0; i < n; i++) {
        d9_json_object_begin(&j);
        d9_json_key(&j, "rule");
        d9_json_string(&j, res[i].name);
        d9_json_key(&j, "ok");
        d9_json_bool(&j, res[i].ok);
        d9_json_key(&j, res[i].is_ns ? "actual_ns" : "actual");
        d9_json_u64(&j, res[i].actual);
        d9_json_key(&j, "reason");
        d9_json_string(&j, res[i].reason);
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    if (r) {
        d9_json_key(&j, "events");
        d9_json_u64(&j, r->events);
        d9_json_key(&j, "duration_ns");
        d9_json_u64(&j, r->duration_ns);
        d9_json_key(&j, "red_flags");
        d9_json_array_begin(&j);
        for (size_t i = 0; i < r->nflags; i++) {
            d9_json_object_begin(&j);
            d9_json_key(&j, "severity");
            d9_json_string(&j, d9a_severity_name(r->flags[i].severity));
            d9_json_key(&j, "code");
            d9_json_string(&j, r->flags[i].code);
            d9_json_key(&j, "title");
            d9_json_string(&j, r->flags[i].title);
            d9_json_object_end(&j);
        }
        d9_json_array_end(&j);
        if (r->upload_lost.segments) { /* as analyze --json: the rules saw an incomplete trace */
            d9_json_key(&j, "upload_loss");
            d9_json_object_begin(&j);
            d9_json_key(&j, "segments");
            d9_json_u64(&j, r->upload_lost.segments);
            d9_json_key(&j, "bytes");
            d9_json_u64(&j, r->upload_lost.bytes);
            d9_json_key(&j, "first_start_unix_ns");
            d9_json_u64(&j, r->upload_lost.first_start_unix_ns);
            d9_json_key(&j, "last_end_unix_ns");
            d9_json_u64(&j, r->upload_lost.last_end_unix_ns);
            d9_json_object_end(&j);
        }
    }
    d9_json_key(&j, "files");
    d9_json_array_begin(&j);
    for (size_t i = 0; i < nfiles; i++) {
        d9_json_object_begin(&j);
        d9_json_key(&j, "path");
        d9_json_string(&j, files[i].path);
        d9_json_key(&j, "status");
        d9_json_string(&j, d9_file_status_name(&files[i]));
        d9_json_key(&j, "message");
        d9_json_string(&j, files[i].message);
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    d9_json_object_end(&j);
    putchar('\n');
}

int d9_cmd_check(int argc, char **argv) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"fail-on", required_argument, NULL, OPT_FAIL_ON},
        {"require-source", required_argument, NULL, OPT_REQUIRE},
        {"max-poll-ms", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_POLL},
        {"max-poll-p99-ms", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_POLL_P99},
        {"max-sched-delay-ms", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_SCHED},
        {"max-sched-delay-p99-ms", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_SCHED_P99},
        {"max-wake-delay-ms", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_WAKE},
        {"max-wake-delay-p99-ms", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_WAKE_P99},
        {"max-dropped", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_DROPPED},
        {"max-blocking-samples", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_BLOCKING},
        {"max-live-tasks", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MAX_LIVE_TASKS},
        {"min-events", required_argument, NULL, OPT_RULE_BASE + D9A_RULE_MIN_EVENTS},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    d9a_options opt;
    d9a_options_init(&opt);
    bool json = false, fail_on_given = false;
    d9a_rule rules[64];
    size_t nrules = 0;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 'h') {
            check_usage(stdout);
            return D9_EXIT_OK;
        }
        if (ch == '?' || ch == ':') {
            fprintf(stderr, "dial9 check: unknown or incomplete option '%s'\n", argv[optind - 1]);
            check_usage(stderr);
            return D9_EXIT_USAGE;
        }
        if (nrules == sizeof rules / sizeof rules[0]) {
            fprintf(stderr, "dial9 check: too many rules\n");
            return D9_EXIT_USAGE;
        }
        switch (ch) {
        case OPT_JSON: json = true; break;
        case OPT_FROM:
        case OPT_TO:
            if (d9_cli_parse_time_option("check", ch == OPT_FROM ? "--from" : "--to", optarg,
                                         ch == OPT_FROM ? &opt.from : &opt.to) != 0)
                return D9_EXIT_USAGE;
            break;
        case OPT_WINDOW: {
            uint64_t w;
            if (parse_u64(optarg, &w) != 0 || w < 1024 || w > (1ull << 32)) {
                fprintf(stderr, "dial9 check: --window wants a number >= 1024\n");
                return D9_EXIT_USAGE;
            }
            opt.window_records = (size_t)w;
            break;
        }
        case OPT_FAIL_ON:
            fail_on_given = true;
            if (!strcmp(optarg, "never")) break;
            if (strcmp(optarg, "warning") && strcmp(optarg, "critical")) {
                fprintf(stderr, "dial9 check: --fail-on wants warning, critical or never\n");
                return D9_EXIT_USAGE;
            }
            rules[nrules++] = (d9a_rule){.kind = D9A_RULE_FAIL_ON,
                                         .limit = strcmp(optarg, "warning") ? D9A_CRITICAL : D9A_WARNING};
            break;
        case OPT_REQUIRE:
            rules[nrules++] = (d9a_rule){.kind = D9A_RULE_REQUIRE_SOURCE, .source = optarg};
            break;
        default: {
            d9a_rule_kind kind = (d9a_rule_kind)(ch - OPT_RULE_BASE);
            bool is_ms = kind <= D9A_RULE_MAX_WAKE_P99;
            uint64_t v;
            if ((is_ms ? parse_ms(optarg, &v) : parse_u64(optarg, &v)) != 0) {
                fprintf(stderr, "dial9 check: %s wants %s, not '%s'\n", argv[optind - 1],
                        is_ms ? "milliseconds (e.g. 20 or 0.5)" : "a count", optarg);
                return D9_EXIT_USAGE;
            }
            rules[nrules++] = (d9a_rule){.kind = kind, .limit = v};
            break;
        }
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "dial9 check: no PATH given\n");
        check_usage(stderr);
        return D9_EXIT_USAGE;
    }
    if (d9_cli_check_window("check", &opt.from, &opt.to) != 0) return D9_EXIT_USAGE;
    if (nrules == 0 && !fail_on_given)
        rules[nrules++] = (d9a_rule){.kind = D9A_RULE_FAIL_ON, .limit = D9A_CRITICAL};

    d9_analysis_run run;
    int rc = d9_analysis_run_start(&run, "check", argc - optind, argv + optind, &opt);
    if (rc != D9_EXIT_OK) {
        d9_analysis_run_end(&run, "check");
        return rc;
    }
    const d9a_report *r = run.report;
    bool readable = run.readable;
    d9a_rule_result res[sizeof rules / sizeof rules[0]];
    size_t broken = d9a_check_rules(r, rules, nrules, res);
    if (json) {
        print_json(res, nrules, broken, readable, run.results, run.paths.count, r);
    } else {
        /* rule reasons quote the trace's names: their control characters are escaped */
        FILE *safe = d9_escaping_stream(stdout), *out = safe ? safe : stdout;
        if (!readable) fprintf(out, "FAIL readable: a trace file could not be read or decoded completely\n");
        for (size_t i = 0; i < nrules; i++)
            fprintf(out, "%-4s %s: %s\n", res[i].ok ? "ok" : "FAIL", res[i].name, res[i].reason);
        if (r->upload_lost.segments) { /* not a rule: the trace is incomplete, say so */
            char what[256];
            d9a_upload_loss_describe(&r->upload_lost, what, sizeof what);
            fprintf(out, "note incomplete: %s (disk budget): the rules saw the rest\n", what);
        }
        for (size_t i = 0; i < run.paths.count; i++) /* a torn tail reads as fine: named, not failed */
            if (!d9_file_failed(&run.results[i]) && run.results[i].status == D9_DEC_TRUNCATED)
                fprintf(out, "note truncated: %s: %s\n", run.results[i].path, run.results[i].message);
        size_t total = nrules + !readable, bad = broken + !readable;
        if (bad) fprintf(out, "dial9 check: FAILED: %zu of %zu rule%s broken\n", bad, total, total == 1 ? "" : "s");
        else fprintf(out, "dial9 check: ok: %zu rule%s hold\n", total, total == 1 ? "" : "s");
        if (safe) fclose(safe);
    }
    fflush(stdout);
    d9_analysis_run_end(&run, "check");
    return broken || !readable ? D9_EXIT_DATA : D9_EXIT_OK;
}
