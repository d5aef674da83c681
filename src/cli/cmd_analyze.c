/* `dial9 analyze [--json] [--from T --to T] [--top N] PATH...`: what happened in a trace and
 * what looks wrong, in one pass (src/analysis). Text for people, --json for scripts (schema
 * in docs/analyze.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/report_json.h"
#include "cli/crash_dump_names.h"
#include "cli/dump_window.h"
#include "cli/cli.h"
#include "cli/analysis_run.h"
#include "cli/analyze_text.h"
#include "format/trace_paths.h"
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
            "                   (@503226032430072); a bare number is refused. Polls and parks\n"
            "                   count when they start in it, everything else by its time (as in\n"
            "                   check and export); a window outside the trace is refused\n"
            "  --top N          entries per list (default 10)\n"
            "  --stack-depth N  frames printed per stack in text (default 16; JSON has all)\n"
            "  --window N       records and span marks kept for time ordering (default 524288,\n"
            "                   32 bytes a record)\n"
            "  -h, --help\n"
            "\n"
            D9_CLI_S3_INPUT_HELP
            "Exit status: 0 all read (a torn tail is fine), 1 a file could not be read, is no\n"
            "trace or is damaged (what was read is still analyzed, every intact stream after the\n"
            "damage too), 2 usage error.\n");
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

static uint64_t events_read(const d9_analysis_run *run) {
    uint64_t n = 0;
    for (size_t i = 0; i < run->paths.count; i++) n += run->results[i].stats.events;
    return n;
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
    d9_name_crash_dumps("analyze", argc - optind, argv + optind, stderr); /* a crash dump: named first */
    /* a flight recorder's dump: the report starts at its trigger's look-back (said first) */
    d9_dump_analyze_window(argc - optind, argv + optind, &opt.from, json ? stderr : stdout);
    if (d9_cli_check_window("analyze", &opt.from, &opt.to) != 0) return D9_EXIT_USAGE;
    d9_analysis_run run;
    size_t nothing_read = 0;
    int rc = d9_analysis_run_start(&run, "analyze", argc - optind, argv + optind, &opt);
    if (rc == D9_EXIT_OK) {
        const d9a_report *r = run.report;
        size_t nfiles = run.paths.count;
        if (json) {
            d9a_input_file *files = calloc(nfiles ? nfiles : 1, sizeof *files);
            if (!files) {
                fprintf(stderr, "dial9 analyze: out of memory\n");
                rc = D9_EXIT_DATA;
            } else {
                for (size_t i = 0; i < nfiles; i++)
                    files[i] = (d9a_input_file){run.results[i].path, d9_file_status_name(&run.results[i]),
                                                run.results[i].message, run.results[i].stats.events};
                d9a_report_write_json(stdout, r, &opt, files, nfiles);
                free(files);
            }
        } else if (!run.readable && !events_read(&run)) {
            nothing_read = nfiles; /* not a report of zeros, which reads as "all is well" */
        } else {
            d9_analyze_render R = {r, &opt, nfiles, run.results, (unsigned)(depth > 4096 ? 4096 : depth)};
            d9_analyze_print_text(&R);
        }
        fflush(stdout);
        if (rc == D9_EXIT_OK && !run.readable) rc = D9_EXIT_DATA;
    }
    d9_analysis_run_end(&run, "analyze");
    if (nothing_read) /* after each file's error */
        fprintf(stderr, "dial9 analyze: nothing to analyze: no event could be read from the %zu file%s given\n",
                nothing_read, nothing_read == 1 ? "" : "s");
    return rc;
}
