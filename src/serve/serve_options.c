/* `dial9 serve`'s options (serve_options.h). */
#include "serve/serve_options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/exit_codes.h"

#define DEFAULT_PORT 9009
#define DEFAULT_REQUEST_TIMEOUT_S 10
#define DEFAULT_IDLE_TIMEOUT_S 60
#define DEFAULT_MAX_CONNECTIONS 64
#define DEFAULT_MAX_PER_CLIENT 16
#define DEFAULT_MAX_DECODED_MB 256 /* four times a segment the recorder rotates at its default 64 MiB */

void d9_serve_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 serve [--port P] [--bind ADDR] [--viewer-dir DIR] [OPTIONS] TRACE_DIR\n"
            "\n"
            "Serve the trace viewer and the traces under TRACE_DIR (its runs and segments) over\n"
            "HTTP, on 127.0.0.1 unless --bind says otherwise:\n"
            "  /                the runs, newest first, opening in the viewer   /runs  a plain list\n"
            "  /api/index       JSON: runs, segments, sizes, time ranges\n"
            "  /api/trace?run=R[&seg=N...]   the run's segments (all, or those named), as one trace\n"
            "\n"
            "  -p, --port P          TCP port (default %d; 0: any free port, printed)\n"
            "  -b, --bind ADDR       numeric IPv4 or IPv6 address (default 127.0.0.1). Anything\n"
            "                        else exposes the traces to the network: there is no login\n"
            "      --viewer-dir DIR  the viewer's files (default: found next to the binary, in the\n"
            "                        install tree or the source tree; D9_VIEWER_DIR also works)\n"
            "  -q, --quiet           no request log on standard error\n"
            "      --request-timeout S  a whole request (line and headers) must arrive within S\n"
            "                        seconds, however it trickles in (default %d)\n"
            "      --idle-timeout S  close a connection without traffic for S seconds (default %d)\n"
            "      --max-connections N  connections at once (default %d; the last eighth only\n"
            "                        for client addresses that hold none)\n"
            "      --max-per-client N  connections from one client address (default %d)\n"
            "      --max-decoded MB  index at most MB MiB of one segment's decoded data (default %d):\n"
            "                        a small compressed file can hold gigabytes, and indexing them\n"
            "                        would hold up every request; the rest of such a segment is\n"
            "                        not listed or served (status too_large in /api/index)\n"
            "      --allow-host NAME  answer requests for this Host name too (repeatable; by default\n"
            "                        only localhost names and IP addresses, against DNS rebinding;\n"
            "                        '*': any name)\n"
            "      --selection FILE  serve only the runs and segments FILE names (written by\n"
            "                        `dial9 serve --bucket`, which passes it: see docs/s3.md)\n"
            "      --fetcher DIAL9   the dial9 whose fetch step gets a selection's run from S3 when\n"
            "                        it is opened (passed by `dial9 serve --bucket`; default: the\n"
            "                        dial9 next to this server)\n"
            "  -h, --help\n"
            "\n"
            "Runs until interrupted (Ctrl-C / SIGTERM). Exit status: 0 stopped, 1 cannot listen, cannot\n"
            "read TRACE_DIR or the event loop failed, 2 usage error.\n",
            DEFAULT_PORT, DEFAULT_REQUEST_TIMEOUT_S, DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS,
            DEFAULT_MAX_PER_CLIENT, DEFAULT_MAX_DECODED_MB);
}

/* A whole number in [min, max] for option `name`; false (with a message) otherwise. */
static bool parse_count(const char *name, const char *arg, long min, long max, unsigned *out) {
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (!*arg || *end || errno || v < min || v > max) {
        fprintf(stderr, "dial9 serve: --%s takes %ld..%ld, not '%s'\n", name, min, max, arg);
        return false;
    }
    *out = (unsigned)v;
    return true;
}

int d9_serve_parse_args(int argc, char **argv, d9_serve_args *a) {
    enum { O_VIEWER_DIR = 256, O_REQUEST_TIMEOUT, O_IDLE_TIMEOUT, O_MAX_CONNECTIONS, O_MAX_PER_CLIENT, O_ALLOW_HOST, O_SELECTION, O_FETCHER, O_MAX_DECODED };
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'},
        {"bind", required_argument, NULL, 'b'},
        {"viewer-dir", required_argument, NULL, O_VIEWER_DIR},
        {"request-timeout", required_argument, NULL, O_REQUEST_TIMEOUT},
        {"idle-timeout", required_argument, NULL, O_IDLE_TIMEOUT},
        {"max-connections", required_argument, NULL, O_MAX_CONNECTIONS},
        {"max-per-client", required_argument, NULL, O_MAX_PER_CLIENT},
        {"allow-host", required_argument, NULL, O_ALLOW_HOST},
        {"selection", required_argument, NULL, O_SELECTION},
        {"fetcher", required_argument, NULL, O_FETCHER},
        {"max-decoded", required_argument, NULL, O_MAX_DECODED},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    d9_serve_opts *o = &a->opts;
    *o = (d9_serve_opts){.bind = "127.0.0.1", .port = DEFAULT_PORT, .request_timeout_s = DEFAULT_REQUEST_TIMEOUT_S,
                         .idle_timeout_s = DEFAULT_IDLE_TIMEOUT_S, .max_connections = DEFAULT_MAX_CONNECTIONS,
                         .max_per_client = DEFAULT_MAX_PER_CLIENT,
                         .max_decoded_mb = DEFAULT_MAX_DECODED_MB, .allow_hosts = a->hosts};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":p:b:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': {
            char *end;
            long port = strtol(optarg, &end, 10);
            if (!*optarg || *end || port < 0 || port > 65535) {
                fprintf(stderr, "dial9 serve: --port takes 0..65535\n");
                return D9_EXIT_USAGE;
            }
            o->port = (unsigned)port;
            break;
        }
        case 'b': o->bind = optarg; break;
        case O_VIEWER_DIR: o->viewer_dir = optarg; break;
        case O_SELECTION: o->selection = optarg; break;
        case O_FETCHER: o->fetcher = optarg; break;
        case O_REQUEST_TIMEOUT:
            if (!parse_count("request-timeout", optarg, 1, 3600, &o->request_timeout_s)) return D9_EXIT_USAGE;
            break;
        case O_IDLE_TIMEOUT:
            if (!parse_count("idle-timeout", optarg, 1, 86400, &o->idle_timeout_s)) return D9_EXIT_USAGE;
            break;
        case O_MAX_CONNECTIONS: /* under the usual limit of 1024 open files */
            if (!parse_count("max-connections", optarg, 1, 900, &o->max_connections)) return D9_EXIT_USAGE;
            break;
        case O_ALLOW_HOST:
            if (!*optarg || strlen(optarg) > 255 || o->allow_host_count == D9_SERVE_MAX_ALLOW_HOSTS) {
                fprintf(stderr, "dial9 serve: --allow-host takes a host name (or '*'), at most %d times\n",
                        D9_SERVE_MAX_ALLOW_HOSTS);
                return D9_EXIT_USAGE;
            }
            a->hosts[o->allow_host_count++] = optarg;
            break;
        case O_MAX_PER_CLIENT:
            if (!parse_count("max-per-client", optarg, 1, 900, &o->max_per_client)) return D9_EXIT_USAGE;
            break;
        case O_MAX_DECODED:
            if (!parse_count("max-decoded", optarg, 1, 1048576, &o->max_decoded_mb)) return D9_EXIT_USAGE;
            break;
        case 'q': o->quiet = true; break;
        case 'h': d9_serve_usage(stdout); return D9_EXIT_OK;
        case ':':
            fprintf(stderr, "dial9 serve: option '%s' needs a value\n", argv[optind - 1]);
            return D9_EXIT_USAGE;
        default:
            fprintf(stderr, "dial9 serve: unknown option '%s' (see dial9 serve --help)\n", argv[optind - 1]);
            return D9_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "dial9 serve: give one TRACE_DIR (see dial9 serve --help)\n");
        return D9_EXIT_USAGE;
    }
    o->dir = argv[optind];
    return -1;
}
