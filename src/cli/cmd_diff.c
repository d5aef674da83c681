/* `dial9 diff [options] A B | --a-from T ... PATH | --slowest P% PATH`: two sides of traces
 * compared per spawn location (src/analysis/diff.h; docs/diff.md). Exit 0, 1 when a --fail-on
 * item broke or a file could not be read to its end, 2 on usage errors. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h> /* isfinite: a macro, no libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/diff.h"
#include "analysis/diff_fail_on.h"
#include "analysis/diff_flame.h"
#include "analysis/diff_heap.h"
#include "analysis/diff_render.h"
#include "analysis/diff_side.h"
#include "cli/analysis_run.h"
#include "cli/cli.h"
#include "cli/output_file.h"
#include "cli/text_escape.h"
#include "cli/time_options.h"
#include "common/plain_number.h"
#include "common/round.h"
#include "fleet/s3_fetch.h"
#include "fleet/wall_time.h"

static void diff_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 diff [options] A B                 two runs (each a PATH as analyze takes it)\n"
            "       dial9 diff [options] --a-from T --a-to T --b-from T --b-to T PATH   two windows of one run\n"
            "       dial9 diff [options] --slowest P%% PATH   B: the slowest P %% of polls, A: the rest\n"
            "\n"
            "Compare B against A per spawn location: polls, p50, p99, mean, and which changed,\n"
            "ranked: regressions, new offenders (only in B), improvements, then the rest. A change\n"
            "must be significant (Mann-Whitney on the durations, or the share above the pooled p99)\n"
            "and large enough; each side's coverage (drops, unreadable files, governed sources)\n"
            "is shown, and a group absent from a side that lost data is 'missing_data', not new.\n"
            "\n"
            "  --a-from T, --a-to T, --b-from T, --b-to T\n"
            "                        each side's window, as analyze's --from/--to: 5s, 250ms (since\n"
            "                        the start), -15m (before the end), @NS (absolute); with two\n"
            "                        PATHs each applies to its own side; on an s3:// side a wall-clock\n"
            "                        time (now-15m, 2026-04-01T10:00Z) chooses that side's objects\n"
            "  --a-service S, --a-instance I, --b-service S, --b-instance I\n"
            "                        each s3:// side's selection (over --service/--instance, which apply\n"
            "                        to both); one s3:// PATH with them is both sides' prefix:\n"
            "                        dial9 diff s3://B/P --a-service api --b-service api-canary\n"
            "  --slowest P%%          B = the polls at or above the (100-P)th percentile (0 < P <= 50)\n"
            "  --json                one JSON object (schema dial9.diff, version 1: docs/diff.md)\n"
            "  --fail-on SPEC        exit 1 when: regression, new, data-loss, p50=+X, p99=+X, mean=+X\n"
            "                        (X: +20%% of A's value or +2ms), comma-separated;\n"
            "                        heap_inuse=+X (a heap site's in-use bytes at the end: +50%%, +1MiB)\n"
            "  --flame OUT           differential folded stacks (CPU and off-CPU samples, 'stack A B'\n"
            "                        per line: flamegraph.pl draws it; two runs or windows only)\n"
            "  --min-polls N         fewer polls on a side are not judged (default 20)\n"
            "  --tail-min-polls N    fewer polls on a side leave the p99 unjudged (default 1000)\n"
            "  --min-change P%%       a change moves a quantile by at least P %% of A's (default 10%%)\n"
            "  --min-change-abs D    ... and by at least D: 20us, 1ms (default 20us)\n"
            "  --z Z                 |z| a change's test must reach (default 3.29: p < 0.001)\n"
            "  --top N               rows printed (default 20, 0: all; --json has all)\n"
            "  --window N            records and span marks kept for time ordering\n"
            "                        (default 524288)\n"
            "  -h, --help\n"
            "\n"
            "Exit status: 0 ok, 1 a --fail-on item broke or a file could not be read or decoded,\n"
            "2 usage error.\n");
}

enum {
    OPT_JSON = 256, OPT_A_FROM, OPT_A_TO, OPT_B_FROM, OPT_B_TO, OPT_SLOWEST, OPT_FAIL_ON, OPT_FLAME,
    OPT_MIN_POLLS, OPT_TAIL_MIN_POLLS, OPT_MIN_CHANGE, OPT_MIN_CHANGE_ABS, OPT_Z, OPT_TOP, OPT_WINDOW,
    OPT_A_SERVICE, OPT_A_INSTANCE, OPT_B_SERVICE, OPT_B_INSTANCE,
};

static int parse_double(const char *s, const char *suffix, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || strcmp(end, suffix)) return -1;
    *out = v;
    return 0;
}

static int parse_duration(const char *s, uint64_t *ns) {
    static const struct { const char *unit; double ns; } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        double v;
        if (parse_double(s, units[i].unit, &v) == 0 && v >= 0 && v * units[i].ns <= 1e18) {
            *ns = d9_round_u64(v * units[i].ns);
            return 0;
        }
    }
    return -1;
}

typedef struct side_arg {
    d9a_options opt;
    const char *from, *to; /* as typed, for the label */
    char label[1200];
    /* an s3:// side's own selection: --a-service/--a-instance, a wall-clock --a-from/--a-to */
    d9_s3_selection sel;
    bool has_service, has_instance, has_wall; /* which of sel this side gave */
    const char *wall_from, *wall_to;          /* as typed, for the label */
} side_arg;

static bool side_selects(const side_arg *s) { return s->has_service || s->has_instance || s->has_wall; }

/* The side's selection: the command line's (--service, --instance, wall-clock --from/--to,
 * taken out by main) with the side's own options over it. */
static d9_s3_selection side_selection(const side_arg *s) {
    d9_s3_selection sel = *d9_s3_current_selection();
    if (s->has_service) sel.service = s->sel.service;
    if (s->has_instance) sel.instance = s->sel.instance;
    if (s->sel.has_from) sel.has_from = true, sel.from = s->sel.from;
    if (s->sel.has_to) sel.has_to = true, sel.to = s->sel.to;
    return sel;
}

static void make_label(side_arg *s, const char *path) {
    int n = snprintf(s->label, sizeof s->label, "%s", path);
    const char *sel_words[][2] = {{" service ", s->has_service ? s->sel.service : NULL},
                                  {" instance ", s->has_instance ? s->sel.instance : NULL},
                                  {" objects from ", s->wall_from}, {" objects to ", s->wall_to}};
    for (size_t i = 0; i < 4; i++)
        if (sel_words[i][1] && n >= 0 && (size_t)n < sizeof s->label)
            n += snprintf(s->label + n, sizeof s->label - (size_t)n, "%s%s", sel_words[i][0], sel_words[i][1]);
    if (s->from && n >= 0 && (size_t)n < sizeof s->label)
        n += snprintf(s->label + n, sizeof s->label - (size_t)n, " from %s", s->from);
    if (s->to && n >= 0 && (size_t)n < sizeof s->label)
        snprintf(s->label + n, sizeof s->label - (size_t)n, " to %s", s->to);
}

static int write_flame(const char *path, const d9a_analysis *a, const d9a_analysis *b) {
    char err[600];
    d9_output_file of;
    if (d9_output_open(&of, path, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 diff: --flame: %s\n", err);
        return -1;
    }
    int fd = dup(of.fd); /* fclose leaves of.fd to d9_output_commit */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        d9_output_abort(&of);
        fprintf(stderr, "dial9 diff: --flame %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = d9d_write_flame(f, a, b);
    if (fclose(f) != 0) rc = -1;
    if (rc != 0) {
        d9_output_abort(&of);
        fprintf(stderr, "dial9 diff: --flame %s: could not write it (out of memory or disk)\n", path);
        return -1;
    }
    if (d9_output_commit(&of, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 diff: --flame: %s\n", err);
        return -1;
    }
    return 0;
}

int d9_cmd_diff(int argc, char **argv) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"a-from", required_argument, NULL, OPT_A_FROM},
        {"a-to", required_argument, NULL, OPT_A_TO},
        {"b-from", required_argument, NULL, OPT_B_FROM},
        {"b-to", required_argument, NULL, OPT_B_TO},
        {"slowest", required_argument, NULL, OPT_SLOWEST},
        {"fail-on", required_argument, NULL, OPT_FAIL_ON},
        {"flame", required_argument, NULL, OPT_FLAME},
        {"min-polls", required_argument, NULL, OPT_MIN_POLLS},
        {"tail-min-polls", required_argument, NULL, OPT_TAIL_MIN_POLLS},
        {"min-change", required_argument, NULL, OPT_MIN_CHANGE},
        {"min-change-abs", required_argument, NULL, OPT_MIN_CHANGE_ABS},
        {"z", required_argument, NULL, OPT_Z},
        {"top", required_argument, NULL, OPT_TOP},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"a-service", required_argument, NULL, OPT_A_SERVICE},
        {"a-instance", required_argument, NULL, OPT_A_INSTANCE},
        {"b-service", required_argument, NULL, OPT_B_SERVICE},
        {"b-instance", required_argument, NULL, OPT_B_INSTANCE},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    side_arg side[2];
    memset(side, 0, sizeof side);
    d9a_options_init(&side[0].opt);
    d9a_options_init(&side[1].opt);
    side[0].from = side[0].to = side[1].from = side[1].to = NULL;
    d9d_options dopt;
    d9d_options_init(&dopt);
    bool json = false, windows = false;
    double slowest = 0;
    const char *flame = NULL;
    d9d_fail_on fail_on;
    bool have_fail_on = false;
    uint64_t top = 20;
    optind = 1;
    opterr = 0;
    int ch;
    int li = -1;
    while ((li = -1, ch = getopt_long(argc, argv, "h", opts, &li)) != -1) {
        const char *bad = NULL;
        /* the option as a name: argv[optind - 1] is its value when given apart */
        char opt_name[40];
        snprintf(opt_name, sizeof opt_name, "--%s", li >= 0 ? opts[li].name : "?");
        switch (ch) {
        case 'h': diff_usage(stdout); return D9_EXIT_OK;
        case OPT_JSON: json = true; break;
        case OPT_A_FROM:
        case OPT_A_TO:
        case OPT_B_FROM:
        case OPT_B_TO: {
            side_arg *s = &side[ch == OPT_B_FROM || ch == OPT_B_TO];
            bool from = ch == OPT_A_FROM || ch == OPT_B_FROM;
            time_t wall;
            if (d9_wall_time_parse(optarg, time(NULL), &wall) == 0) { /* an s3:// side's objects */
                if (from) s->sel.has_from = true, s->sel.from = wall, s->wall_from = optarg;
                else s->sel.has_to = true, s->sel.to = wall, s->wall_to = optarg;
                s->has_wall = true;
                break;
            }
            if (d9_cli_parse_time_option("diff", opt_name, optarg, from ? &s->opt.from : &s->opt.to) != 0)
                return D9_EXIT_USAGE;
            *(from ? &s->from : &s->to) = optarg;
            windows = true;
            break;
        }
        case OPT_A_SERVICE:
        case OPT_B_SERVICE:
        case OPT_A_INSTANCE:
        case OPT_B_INSTANCE: {
            side_arg *s = &side[ch == OPT_B_SERVICE || ch == OPT_B_INSTANCE];
            if (!optarg[0]) bad = "a name";
            else if (ch == OPT_A_SERVICE || ch == OPT_B_SERVICE) s->sel.service = optarg, s->has_service = true;
            else s->sel.instance = optarg, s->has_instance = true;
            break;
        }
        case OPT_SLOWEST: {
            double p;
            if (parse_double(optarg, "%", &p) != 0 || !(p > 0) || p > 50) bad = "a percentage above 0 and at most 50, e.g. 1%";
            else slowest = p / 100;
            break;
        }
        case OPT_FAIL_ON: {
            char err[300];
            if (have_fail_on) {
                fprintf(stderr, "dial9 diff: --fail-on given twice: list its items comma-separated\n");
                return D9_EXIT_USAGE;
            }
            if (d9d_fail_on_parse(optarg, &fail_on, err, sizeof err) != 0) {
                fprintf(stderr, "dial9 diff: %s\n", err);
                return D9_EXIT_USAGE;
            }
            have_fail_on = true;
            break;
        }
        case OPT_FLAME: flame = optarg; break;
        case OPT_MIN_POLLS:
            if (!d9_plain_u64(optarg, 0, UINT64_MAX, &dopt.min_polls) || dopt.min_polls < 2) bad = "a count of at least 2";
            break;
        case OPT_TAIL_MIN_POLLS:
            if (!d9_plain_u64(optarg, 0, UINT64_MAX, &dopt.tail_min_polls) || dopt.tail_min_polls < 2) bad = "a count of at least 2";
            break;
        case OPT_MIN_CHANGE: {
            double p;
            if (parse_double(optarg, "%", &p) != 0 || p < 0 || p > 1e6) bad = "a percentage, e.g. 10%";
            else dopt.relative_pct = p;
            break;
        }
        case OPT_MIN_CHANGE_ABS:
            if (parse_duration(optarg, &dopt.abs_ns) != 0) bad = "a duration with its unit: 20us, 1ms";
            break;
        case OPT_Z:
            if (parse_double(optarg, "", &dopt.z) != 0 || !(dopt.z > 0) || dopt.z > 100) bad = "a number above 0, e.g. 3.29";
            break;
        case OPT_TOP:
            if (!d9_plain_u64(optarg, 0, UINT64_MAX, &top)) bad = "a count (0: all)";
            break;
        case OPT_WINDOW: {
            uint64_t w;
            if (!d9_plain_u64(optarg, 0, UINT64_MAX, &w) || w < 1024 || w > (1ull << 32)) bad = "a number >= 1024";
            else side[0].opt.window_records = side[1].opt.window_records = (size_t)w;
            break;
        }
        default:
            fprintf(stderr, "dial9 diff: unknown or incomplete option '%s'\n", argv[optind - 1]);
            diff_usage(stderr);
            return D9_EXIT_USAGE;
        }
        if (bad) {
            fprintf(stderr, "dial9 diff: %s wants %s, not '%s'\n", opt_name, bad, optarg);
            return D9_EXIT_USAGE;
        }
    }
    int npaths = argc - optind;
    char **paths = argv + optind;
    d9d_mode mode;
    if (npaths < 1 || npaths > 2) {
        fprintf(stderr, "dial9 diff: %s\n", npaths < 1 ? "no PATH given" : "at most two PATHs: A and B (a run directory each)");
        diff_usage(stderr);
        return D9_EXIT_USAGE;
    }
    bool per_side_selection = side_selects(&side[0]) || side_selects(&side[1]);
    for (int s = 0; s < 2; s++) {
        const char *path = paths[npaths == 2 ? s : 0];
        if (side_selects(&side[s]) && !d9_s3_is_url(path)) {
            fprintf(stderr, "dial9 diff: --%c-service, --%c-instance and wall-clock --%c-from/--%c-to choose "
                    "s3:// objects, and %c is the local PATH '%s'\n", 'a' + s, 'a' + s, 'a' + s, 'a' + s, 'A' + s, path);
            return D9_EXIT_USAGE;
        }
    }
    if (per_side_selection && slowest > 0) {
        fprintf(stderr, "dial9 diff: --slowest splits one selection: give it --service/--instance, not --a-/--b- ones\n");
        return D9_EXIT_USAGE;
    }
    if (slowest > 0) {
        if (npaths != 1 || windows) {
            fprintf(stderr, "dial9 diff: --slowest takes one PATH and no --a-/--b- window\n");
            return D9_EXIT_USAGE;
        }
        if (flame) {
            fprintf(stderr, "dial9 diff: --flame compares two runs or two windows, not --slowest\n");
            return D9_EXIT_USAGE;
        }
        mode = D9D_SLOWEST;
    } else if (npaths == 2 || per_side_selection) {
        /* one s3:// PATH with a selection per side: two selections of one prefix */
        mode = D9D_RUNS;
    } else if (windows) {
        mode = D9D_WINDOWS;
    } else {
        fprintf(stderr, "dial9 diff: one PATH needs two windows (--a-from/--a-to/--b-from/--b-to) or --slowest P%%\n");
        return D9_EXIT_USAGE;
    }
    if (have_fail_on && mode == D9D_SLOWEST)
        for (size_t i = 0; i < fail_on.n; i++)
            if (d9d_fail_item_needs_durations(&fail_on.items[i])) {
                fprintf(stderr, "dial9 diff: --fail-on %s compares two runs or windows, not --slowest\n",
                        fail_on.items[i].text);
                return D9_EXIT_USAGE;
            }
    if (have_fail_on && mode != D9D_RUNS)
        for (size_t i = 0; i < fail_on.n; i++)
            if (d9d_fail_item_needs_runs(&fail_on.items[i])) {
                fprintf(stderr, "dial9 diff: --fail-on %s compares two runs (a heap is a whole run's)\n",
                        fail_on.items[i].text);
                return D9_EXIT_USAGE;
            }
    for (int s = 0; s < 2; s++)
        if (d9_cli_check_window("diff", &side[s].opt.from, &side[s].opt.to) != 0) return D9_EXIT_USAGE;

    d9_analysis_run run[2];
    memset(run, 0, sizeof run);
    d9_path_list fetched[2];
    memset(fetched, 0, sizeof fetched);
    int nruns = mode == D9D_SLOWEST ? 1 : 2;
    int rc = D9_EXIT_OK;
    /* side by side: A is fetched and read before B is fetched, so B's fetch may evict A's
     * objects from a small cache (DIAL9_S3_CACHE_MAX_MB) without losing anything */
    for (int s = 0; s < nruns && rc == D9_EXIT_OK; s++) {
        char *path = paths[npaths == 2 ? s : 0];
        make_label(&side[s], path);
        if (d9_s3_is_url(path)) {
            char err[1024];
            d9_s3_selection sel = side_selection(&side[s]);
            if (d9_s3_fetch_selected(path, &sel, &fetched[s], err, sizeof err) != 0) {
                fprintf(stderr, "dial9 diff: %c: %s\n", 'A' + s, err);
                rc = D9_EXIT_DATA;
                break;
            }
            rc = d9_analysis_run_start(&run[s], "diff", (int)fetched[s].count, fetched[s].paths, &side[s].opt);
        } else {
            rc = d9_analysis_run_start(&run[s], "diff", 1, &path, &side[s].opt);
        }
    }
    d9d_diff *d = rc == D9_EXIT_OK ? d9d_new(mode, &dopt) : NULL;
    if (rc == D9_EXIT_OK && !d) rc = D9_EXIT_DATA;
    if (rc == D9_EXIT_OK) {
        if (mode == D9D_SLOWEST) {
            int n = snprintf(side[1].label, sizeof side[1].label, "the slowest %g %% of polls of ", slowest * 100);
            if (n > 0 && (size_t)n < sizeof side[1].label)
                snprintf(side[1].label + n, sizeof side[1].label - (size_t)n, "%.1000s", side[0].label);
            n = (int)strlen(side[0].label);
            if ((size_t)n + 12 < sizeof side[0].label) memcpy(side[0].label + n, " (the rest)", 12);
            d9d_side_from(&d->side[0], run[0].report, run[0].readable, side[0].label);
            d9d_side_from(&d->side[1], run[0].report, run[0].readable, side[1].label);
            if (d9d_add_groups_slowest(d, run[0].analysis, slowest) != 0) rc = D9_EXIT_DATA;
        } else {
            for (int s = 0; s < 2; s++) d9d_side_from(&d->side[s], run[s].report, run[s].readable, side[s].label);
            if (d9d_add_groups(d, run[0].analysis, run[1].analysis) != 0) rc = D9_EXIT_DATA;
        }
        if (rc != D9_EXIT_OK) fprintf(stderr, "dial9 diff: out of memory\n");
    }
    d9d_heap heap = {0};
    bool heap_a = rc == D9_EXIT_OK && mode == D9D_RUNS && d9d_heap_present(run[0].analysis);
    bool heap_b = rc == D9_EXIT_OK && mode == D9D_RUNS && d9d_heap_present(run[1].analysis);
    if (heap_a != heap_b) /* said, not silently left out: the other run was recorded without it */
        fprintf(stderr, "dial9 diff: only %c has heap samples: no heap section (record both with DIAL9_MEMORY_PROFILE_ENABLED=1)\n",
                heap_a ? 'A' : 'B');
    if (heap_a && heap_b) {
        if (d9d_heap_build(&heap, run[0].analysis, run[1].analysis) == 0) d->heap = &heap;
        else {
            fprintf(stderr, "dial9 diff: out of memory\n");
            rc = D9_EXIT_DATA;
        }
    }
    bool broken = false;
    if (rc == D9_EXIT_OK) {
        d9d_finish(d);
        d9d_gate gate = {.f = have_fail_on ? &fail_on : NULL};
        if (have_fail_on) gate.nbroken = d9d_fail_on_check(&fail_on, d, gate.broken, gate.why);
        if (json) {
            d9d_print_json(stdout, d, &gate);
        } else {
            /* group names are the trace's strings: their control characters are escaped */
            FILE *safe = d9_escaping_stream(stdout), *out = safe ? safe : stdout;
            d9d_print_text(out, d, (size_t)top, &gate);
            if (safe) fclose(safe);
        }
        fflush(stdout);
        broken = gate.nbroken > 0 || !d->side[0].readable || !d->side[1].readable;
        if (flame && write_flame(flame, run[0].analysis, run[1].analysis) != 0) broken = true;
    }
    d9d_free(d);
    d9d_heap_free(&heap);
    for (int s = 0; s < nruns; s++) d9_analysis_run_end(&run[s], "diff");
    for (int s = 0; s < 2; s++) d9_path_list_free(&fetched[s]);
    if (rc != D9_EXIT_OK) return rc;
    return broken ? D9_EXIT_DATA : D9_EXIT_OK;
}
