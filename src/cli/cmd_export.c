/* `dial9 export --format F [--from T --to T] PATH... -o OUT`: a trace in the formats other
 * tools read (src/export/, docs/export.md). */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output_file.h"
#include "cli/time_options.h"
#include "format/trace_paths.h"
#include "cli/trace_reader.h"
#include "export/export.h"

static void export_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 export --format FORMAT [options] PATH... [-o OUT]\n"
            "\n"
            "Write a trace (or a time window of it) in a format other tools read:\n"
            "  perfetto    Perfetto protobuf trace: a thread track per worker with poll and park\n"
            "              slices, flows from each wake to the poll it caused, queue depth and\n"
            "              scheduling delay counters, stack samples (ui.perfetto.dev)\n"
            "  chrome      Chrome JSON trace events (Perfetto UI, chrome://tracing): for windows,\n"
            "              ~100 bytes per event, refused beyond --max-events\n"
            "  folded      folded stacks 'a;b;c N' (flamegraph.pl, speedscope, inferno)\n"
            "  pprof       gzipped profile.proto with thread/task/location labels (go tool pprof)\n"
            "  speedscope  speedscope JSON: sampled profiles per thread, or polls per worker\n"
            "\n"
            "  -f, --format FORMAT   one of the above (required)\n"
            "  -o, --output OUT      the file to write ('-' or none: standard output, except for\n"
            "                        binary formats to a terminal); a file is written beside\n"
            "                        itself and renamed when complete, a device or FIFO in place\n"
            "      --from T, --to T  only [T1, T2): T is a time since the trace start with a unit\n"
            "                        (1.5s, 250ms, 10us, 42ns, 2m, 1h), - and a time before its\n"
            "                        end (-15m), or @NS, an absolute CLOCK_MONOTONIC time in ns;\n"
            "                        a bare number is refused. The polls and parks that start\n"
            "                        in it (drawn cut at T2), the rest by its time: what analyze\n"
            "                        and check count; a window outside the trace is refused\n"
            "      --stacks WHICH    cpu (default), offcpu (context-switch samples) or all: the\n"
            "                        samples of folded, pprof and speedscope profiles; heap\n"
            "                        (pprof only): the sampled heap's alloc_objects, alloc_space,\n"
            "                        inuse_objects, inuse_space by allocation site, weighted\n"
            "      --by-location     folded, speedscope: root each stack at the spawn location of\n"
            "                        the poll it hit ('[parked]', '[not in a poll]' otherwise)\n"
            "      --by-cause        folded: root each off-CPU stack at its cause ('[lock]', '[io]',\n"
            "                        '[sleep]', '[fault]', '[blocked_other]', '[runnable]')\n"
            "      --speedscope KIND samples (default) or polls (evented: polls and parks)\n"
            "      --max-events N    chrome: the most trace events to write (default %u; 0: no\n"
            "                        limit)\n"
            "  -q, --quiet           no summary on standard error\n"
            "  -h, --help\n"
            "\n"
            D9_CLI_S3_INPUT_HELP
            "PATH is a trace file or a directory (searched for trace files). Exit status: 0 ok,\n"
            "1 a file could not be read or decoded (what was read is still exported) or the\n"
            "output could not be written, 2 usage error or output over the limit.\n",
            D9_XCHROME_DEFAULT_MAX_EVENTS);
}

typedef struct export_ctx {
    d9_xmodel *model;
    bool oom;
} export_ctx;

static int on_event(void *p, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    export_ctx *c = p;
    (void)dec;
    (void)file_index;
    if (d9_xmodel_add(c->model, ev) != 0) {
        c->oom = true;
        return 1;
    }
    return 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void summary(const d9_xmodel *m, d9_xformat f, const char *out, double ms) {
    uint64_t flows = 0;
    for (size_t i = 0; i < m->wake_count; i++) flows += m->wakes[i].target != D9_XNONE;
    fprintf(stderr,
            "dial9 export: %s -> %s: %.3f s window, %zu workers, %zu polls, %zu parks, %zu wakes "
            "(%" PRIu64 " flows), %zu stack samples, %zu frames; %.0f ms\n",
            d9_xformat_name(f), out, (m->to - m->from) / 1e9, m->worker_count, m->poll_count,
            m->park_count, m->wake_count, flows, m->sample_count, m->frame_count, ms);
    if (m->unmatched_polls || m->unmatched_parks)
        fprintf(stderr, "dial9 export: %" PRIu64 " poll and %" PRIu64
                        " park starts or ends without their other half were left out\n",
                m->unmatched_polls, m->unmatched_parks);
    if (m->cut_slices)
        fprintf(stderr, "dial9 export: %" PRIu64 " slices ran into the next one on their worker and "
                        "were cut there\n", m->cut_slices);
    if (m->unresolved_strings)
        fprintf(stderr, "dial9 export: %" PRIu64 " pooled strings were undefined when read\n",
                m->unresolved_strings);
}

typedef struct export_args {
    d9_xformat format;
    bool have_format, quiet;
    const char *output;
    d9_xwindow window;
    d9_xopts opts;
} export_args;

/* 0 ok, D9_EXIT_USAGE (message printed) */
static int parse_args(int argc, char **argv, export_args *a, bool *help) {
    enum { O_FROM = 256, O_TO, O_STACKS, O_BY_LOCATION, O_SPEEDSCOPE, O_MAX_EVENTS, O_BY_CAUSE };
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"from", required_argument, NULL, O_FROM},
        {"to", required_argument, NULL, O_TO},
        {"stacks", required_argument, NULL, O_STACKS},
        {"by-location", no_argument, NULL, O_BY_LOCATION},
        {"by-cause", no_argument, NULL, O_BY_CAUSE},
        {"speedscope", required_argument, NULL, O_SPEEDSCOPE},
        {"max-events", required_argument, NULL, O_MAX_EVENTS},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    d9_xopts_init(&a->opts);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":f:o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (!d9_xformat_parse(optarg, &a->format)) {
                fprintf(stderr, "dial9 export: unknown format '%s' (perfetto, chrome, folded, pprof, speedscope)\n", optarg);
                return D9_EXIT_USAGE;
            }
            a->have_format = true;
            break;
        case 'o': a->output = optarg; break;
        case O_FROM:
        case O_TO:
            if (d9_cli_parse_time_option("export", c == O_FROM ? "--from" : "--to", optarg,
                                         c == O_FROM ? &a->window.from : &a->window.to) != 0)
                return D9_EXIT_USAGE;
            break;
        case O_STACKS:
            if (!strcmp(optarg, "cpu")) a->opts.stacks = D9_XSTACKS_CPU;
            else if (!strcmp(optarg, "offcpu") || !strcmp(optarg, "off-cpu")) a->opts.stacks = D9_XSTACKS_OFFCPU;
            else if (!strcmp(optarg, "all")) a->opts.stacks = D9_XSTACKS_ALL;
            else if (!strcmp(optarg, "heap")) a->opts.stacks = D9_XSTACKS_HEAP; /* pprof: checked below */
            else {
                fprintf(stderr, "dial9 export: --stacks takes cpu, offcpu, all or heap\n");
                return D9_EXIT_USAGE;
            }
            break;
        case O_BY_LOCATION: a->opts.by_location = true; break;
        case O_BY_CAUSE: a->opts.by_cause = true; break;
        case O_SPEEDSCOPE:
            if (!strcmp(optarg, "polls")) a->opts.speedscope_polls = true;
            else if (!strcmp(optarg, "samples")) a->opts.speedscope_polls = false;
            else {
                fprintf(stderr, "dial9 export: --speedscope takes samples or polls\n");
                return D9_EXIT_USAGE;
            }
            break;
        case O_MAX_EVENTS: {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!*optarg || *end) {
                fprintf(stderr, "dial9 export: --max-events takes a number\n");
                return D9_EXIT_USAGE;
            }
            a->opts.max_events = v;
            break;
        }
        case 'q': a->quiet = true; break;
        case 'h': *help = true; return 0;
        case ':':
            fprintf(stderr, "dial9 export: option '%s' needs a value\n", argv[optind - 1]);
            return D9_EXIT_USAGE;
        default:
            fprintf(stderr, "dial9 export: unknown option '%s'\n", argv[optind - 1]);
            return D9_EXIT_USAGE;
        }
    }
    if (!a->have_format) {
        fprintf(stderr, "dial9 export: --format is required\n");
        return D9_EXIT_USAGE;
    }
    if (d9_cli_check_window("export", &a->window.from, &a->window.to) != 0) return D9_EXIT_USAGE;
    if (a->opts.stacks == D9_XSTACKS_HEAP && a->format != D9_XF_PPROF) {
        fprintf(stderr, "dial9 export: --stacks heap is for --format pprof\n");
        return D9_EXIT_USAGE;
    }
    if (optind >= argc) {
        fprintf(stderr, "dial9 export: no PATH given\n");
        return D9_EXIT_USAGE;
    }
    return 0;
}

/* Open the output: stdout, or OUT through a d9_output_file (replaced whole at the end). */
static FILE *open_output(const export_args *a, d9_output_file *of) {
    *of = (d9_output_file){.fd = -1};
    bool binary = a->format == D9_XF_PERFETTO || a->format == D9_XF_PPROF;
    if (!a->output || !strcmp(a->output, "-")) {
        if (binary && isatty(STDOUT_FILENO)) {
            fprintf(stderr, "dial9 export: not writing a binary %s file to a terminal: use -o OUT\n",
                    d9_xformat_name(a->format));
            return NULL;
        }
        return stdout;
    }
    char err[PATH_MAX + 128];
    if (d9_output_open(of, a->output, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 export: %s\n", err);
        return NULL;
    }
    /* a dup: fclose leaves of->fd to d9_output_commit, which reports its close */
    int fd = dup(of->fd);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        fprintf(stderr, "dial9 export: %s: %m\n", a->output);
        if (fd >= 0) close(fd);
        d9_output_abort(of);
    }
    return f;
}

int d9_cmd_export(int argc, char **argv) {
    export_args a = {0};
    bool help = false;
    int rc = parse_args(argc, argv, &a, &help);
    if (help) {
        export_usage(stdout);
        return D9_EXIT_OK;
    }
    if (rc != 0) {
        fprintf(stderr, "(see dial9 export --help)\n");
        return rc;
    }
    a.opts.name = argv[optind];
    d9_path_list paths = {0};
    char err[600];
    if (d9_expand_paths(argc - optind, argv + optind, &paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 export: %s\n", err);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    double t0 = now_ms();
    export_ctx ctx = {.model = d9_xmodel_new()};
    d9_file_result *results = calloc(paths.count, sizeof *results);
    if (!ctx.model || !results) {
        fprintf(stderr, "dial9 export: out of memory\n");
        d9_xmodel_free(ctx.model);
        free(results);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    rc = d9_read_trace_files(&paths, on_event, &ctx, results);
    d9_report_skipped_dirs(stderr, "export", &paths);
    d9_report_file_problems(stderr, "export", results, paths.count, false);
    free(results);
    FILE *out = NULL;
    d9_output_file of = {.fd = -1};
    if (ctx.oom) {
        fprintf(stderr, "dial9 export: out of memory while reading the trace\n");
        rc = D9_EXIT_DATA;
        goto done;
    }
    if (d9_xmodel_finish(ctx.model, &a.window, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 export: %s\n", err);
        rc = ctx.model->failed ? D9_EXIT_DATA : D9_EXIT_USAGE;
        goto done;
    }
    out = open_output(&a, &of);
    if (!out) {
        rc = a.output ? D9_EXIT_DATA : D9_EXIT_USAGE;
        goto done;
    }
    int wr = d9_export_write(ctx.model, a.format, &a.opts, out, err, sizeof err);
    if (out != stdout && fclose(out) != 0 && wr == D9_XWRITE_OK) {
        snprintf(err, sizeof err, "%s: %m", a.output);
        wr = D9_XWRITE_ERROR;
    }
    if (wr == D9_XWRITE_OK && of.fd >= 0 && d9_output_commit(&of, err, sizeof err) != 0)
        wr = D9_XWRITE_ERROR;
    if (wr != D9_XWRITE_OK) {
        fprintf(stderr, "dial9 export: %s\n", err);
        rc = wr == D9_XWRITE_REFUSED ? D9_EXIT_USAGE : D9_EXIT_DATA;
        goto done;
    }
    if (!a.quiet) summary(ctx.model, a.format, a.output ? a.output : "-", now_ms() - t0);
done:
    d9_output_abort(&of);
    d9_xmodel_free(ctx.model);
    d9_path_list_free(&paths);
    return rc;
}
