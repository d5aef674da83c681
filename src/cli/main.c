/* `dial9`: dispatch to a subcommand from the table below. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "fleet/s3_fetch.h"
#include "format/trace_paths.h"
#include "dial9/version.h"

#ifndef D9_VERSION
#define D9_VERSION DIAL9_VERSION_STRING
#endif

/* One line per subcommand; the implementation is in cmd_<name>.c. */
static const d9_cli_command commands[] = {
    {"stats", "summarize traces: events by schema, frames, time range, workers, drops", d9_cmd_stats},
    {"dump", "print every event with its timestamp and fields (text or JSON lines)", d9_cmd_dump},
    {"export", "write a trace for other tools: perfetto, chrome, folded, pprof, speedscope", d9_cmd_export},
    {"serve", "serve the viewer and the traces of a directory over HTTP (127.0.0.1)", d9_cmd_serve},
    {"symbolize", "name callchain addresses (ELF symbols, DWARF lines) and append them to the traces", d9_cmd_symbolize},
    {"analyze", "find what made a trace slow: long polls and their stacks, delays, red flags", d9_cmd_analyze},
    {"check", "pass/fail rules on a trace for CI and canaries (exit 0 ok, 1 a rule broke)", d9_cmd_check},
    {"diff", "compare two runs, two windows or the slowest polls per spawn location: what got slower", d9_cmd_diff},
    {"upload", "upload a trace directory's sealed segments to S3 (what a recorder left, or a finished run)", d9_cmd_upload},
    {"trigger", "dump what a recording process holds around now (its flight recorder): dial9 trigger PID|RUN_DIR", d9_cmd_trigger},
    {"dumps", "list flight recorder dumps with their trigger and window: dial9 dumps DIR|s3://BUCKET[/PREFIX]", d9_cmd_dumps},
    {"run", "record an unmodified program: dial9 run [--trace-dir D] -- CMD ARGS...", d9_cmd_run},
    {"fold", "fold segments into Parquet tables (polls, poll_hist, sched, wakes, samples, stacks, segments) for DuckDB, Athena, ...", d9_cmd_fold},
};

static void usage(FILE *out) {
    fprintf(out,
            "usage: dial9 <command> [options] PATH...\n"
            "       dial9 <command> --help | dial9 --help | dial9 --version\n"
            "\n"
            "PATH is a trace file (trace.N.bin, .bin.gz, .bin.zst, .bin.active), several\n"
            "files, or a directory searched recursively for trace files (in run directory,\n"
            "then segment order), or s3://BUCKET[/PREFIX] with --service S, --instance I and\n"
            "a wall-clock window --from/--to (now-15m, now-2h, now-1d, or YYYY-MM-DDTHH:MM[:SS]Z;\n"
            "-15m is always before the trace's end) to read\n"
            "uploaded traces;\n"
            "dial9 serve --bucket B [--prefix P] serves the last 24 h of them (--from, or --all).\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit status: 0 ok, 1 a file could not be read or decoded, 2 usage error\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return D9_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (!strcmp(cmd, "help") && argc > 2) {
            /* `dial9 help stats` is `dial9 stats --help` */
            char *sub[] = {argv[2], "--help", NULL};
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (!strcmp(commands[i].name, argv[2])) return commands[i].run(2, sub);
            fprintf(stderr, "dial9: unknown command '%s'\n", argv[2]);
            return D9_EXIT_USAGE;
        }
        usage(stdout);
        return D9_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("dial9 %s (trace format v1)\n", D9_VERSION);
        return D9_EXIT_OK;
    }
    if (!strcmp(cmd, "_serve-fetch")) return d9_cmd_serve_fetch(argc - 1, argv + 1);
    /* s3:// inputs and `serve --bucket`: their selection options are taken out here, the
     * objects fetched into a local cache; the commands read local files (fleet/s3_fetch.h) */
    char err[1024];
    d9_remote_paths = d9_s3_paths;
    if (d9_s3_take_selection_args(&argc, argv, err, sizeof err) != 0 ||
        (!strcmp(cmd, "serve") && d9_s3_serve_args(&argc, &argv, err, sizeof err) != 0)) {
        fprintf(stderr, "dial9 %s: %s\n", cmd, err);
        return strstr(err, "usage") ? D9_EXIT_USAGE : D9_EXIT_DATA;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, cmd)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "dial9: unknown command '%s' (see dial9 --help)\n", cmd);
    return D9_EXIT_USAGE;
}
