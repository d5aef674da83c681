/* `dial9 dump [--jsonl] PATH...`: every event, one per line, in file order. */
#include <getopt.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/event_format.h"
#include "format/trace_paths.h"
#include "cli/trace_reader.h"

static void dump_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 dump [--jsonl] PATH...\n"
            "\n"
            "Print every event with its timestamp and decoded fields, one per line, in file\n"
            "order (per stream; not sorted by time). Pooled strings and stacks are resolved;\n"
            "stack addresses are printed in hex.\n"
            "\n"
            "  --jsonl   one JSON object per line: {\"ts\":..., \"event\":\"Name\", \"fields\":{...}}\n"
            "  -h, --help\n"
            "\n"
            D9_CLI_S3_INPUT_HELP
            "Problems (a torn tail, damage) are reported on stderr. Exit status: 0 all read (a torn\n"
            "tail is fine), 1 a file could not be read, is no trace or is damaged (every intact\n"
            "stream after the damage is still printed), 2 usage error.\n");
}

typedef struct dump_ctx {
    bool jsonl;
    d9_json json;
} dump_ctx;

static int on_event(void *p, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    dump_ctx *c = p;
    if (c->jsonl) {
        d9_format_event_json(&c->json, ev);
        putc('\n', stdout);
    } else {
        d9_format_event_text(stdout, ev);
        putc('\n', stdout);
    }
    return ferror(stdout) ? 1 : 0; /* stop when nobody reads the output any more */
}

int d9_cmd_dump(int argc, char **argv) {
    static const struct option opts[] = {
        {"jsonl", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    dump_ctx ctx = {0};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': ctx.jsonl = true; break;
        case 'h': dump_usage(stdout); return D9_EXIT_OK;
        default:
            fprintf(stderr, "dial9 dump: unknown option '%s'\n", argv[optind - 1]);
            dump_usage(stderr);
            return D9_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "dial9 dump: no PATH given\n");
        dump_usage(stderr);
        return D9_EXIT_USAGE;
    }
    d9_path_list paths = {0};
    char err[512];
    if (d9_expand_paths(argc - optind, argv + optind, &paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 dump: %s\n", err);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    d9_json_init(&ctx.json, stdout, false);
    d9_file_result *results = calloc(paths.count, sizeof *results);
    if (!results) {
        fprintf(stderr, "dial9 dump: out of memory\n");
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    int rc = d9_read_trace_files(&paths, on_event, &ctx, results);
    fflush(stdout);
    d9_report_skipped_dirs(stderr, "dump", &paths);
    d9_report_file_problems(stderr, "dump", results, paths.count, false);
    free(results);
    d9_path_list_free(&paths);
    return rc;
}
