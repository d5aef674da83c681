/* `dial9 serve [--port P] [--bind ADDR] [--viewer-dir DIR] DIR`: the viewer and the traces of
 * DIR over HTTP (src/serve/, docs/serve.md). The server is its own executable, dial9-serve
 * (cmake/serve.cmake, built when libmicrohttpd is found), so that libmicrohttpd and the TLS
 * libraries behind it are loaded by it alone and not by every `dial9` command: `dial9 run`
 * would add their loading to the start of the program it records. This file is in both:
 * in `dial9`, `dial9 serve` execs dial9-serve (found next to the dial9 binary, or in the
 * install tree's libexec directory) and only parses the options itself when there is none;
 * in dial9-serve (D9_HAVE_MHD), it parses them and serves. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#ifdef D9_HAVE_MHD
#include "serve/serve.h"
#endif

#define DEFAULT_PORT 9009
#define DEFAULT_REQUEST_TIMEOUT_S 10
#define DEFAULT_IDLE_TIMEOUT_S 60
#define DEFAULT_MAX_CONNECTIONS 64
#define DEFAULT_MAX_PER_CLIENT 16
#define MAX_ALLOW_HOSTS 64

static void serve_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 serve [--port P] [--bind ADDR] [--viewer-dir DIR] [OPTIONS] TRACE_DIR\n"
            "\n"
            "Serve the trace viewer and the traces under TRACE_DIR (its runs and segments) over\n"
            "HTTP, on 127.0.0.1 unless --bind says otherwise:\n"
            "  /                the viewer          /runs        the runs, linking to the viewer\n"
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
            "      --allow-host NAME  answer requests for this Host name too (repeatable; by default\n"
            "                        only localhost names and IP addresses, against DNS rebinding;\n"
            "                        '*': any name)\n"
            "  -h, --help\n"
            "\n"
            "Runs until interrupted (Ctrl-C / SIGTERM). Exit status: 0 stopped, 1 cannot listen, cannot\n"
            "read TRACE_DIR or the event loop failed, 2 usage error.\n",
            DEFAULT_PORT, DEFAULT_REQUEST_TIMEOUT_S, DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS,
            DEFAULT_MAX_PER_CLIENT);
}

#if !defined(D9_HAVE_MHD) && defined(D9_SERVE_BUILT)
#define SERVER_NAME "dial9-serve"
#ifndef D9_SERVE_BIN_TO_LIBEXEC
#define D9_SERVE_BIN_TO_LIBEXEC "../libexec"
#endif

/* dial9-serve next to this binary (the build directory), else where `cmake --install` puts it
 * from the bin directory. `where` says where it was looked for. */
static bool find_server(char *out, size_t len, char *where, size_t where_len) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(where, where_len, "(/proc/self/exe unreadable: %s)", strerror(errno));
        return false;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(where, where_len, "%s/ or %s/%s/", exe, exe, D9_SERVE_BIN_TO_LIBEXEC);
    const char *rel[] = {"", "/" D9_SERVE_BIN_TO_LIBEXEC};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
        if (snprintf(out, len, "%s%s/" SERVER_NAME, exe, rel[i]) < (int)len && access(out, X_OK) == 0)
            return true;
    return false;
}
#endif

#ifdef D9_HAVE_MHD
static bool has_index(const char *dir) {
    char path[PATH_MAX];
    struct stat st;
    return snprintf(path, sizeof path, "%s/index.html", dir) < (int)sizeof path && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

/* The viewer: next to the binary (installed: ../share/dial9/viewer; in a build directory of
 * the source tree: ../viewer), then where this build was configured from and installs to. */
static const char *find_viewer(char *buf, size_t len) {
    const char *env = getenv("D9_VIEWER_DIR");
    if (env && *env && has_index(env)) return env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        const char *rel[] = {"/../share/dial9/viewer", "/../viewer", "/viewer"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
            if (snprintf(buf, len, "%s%s", exe, rel[i]) < (int)len && has_index(buf)) return buf;
    }
#ifdef D9_SERVE_SOURCE_DIR
    if (snprintf(buf, len, "%s/viewer", D9_SERVE_SOURCE_DIR) < (int)len && has_index(buf)) return buf;
#endif
#ifdef D9_SERVE_VIEWER_INSTALL_DIR
    if (has_index(D9_SERVE_VIEWER_INSTALL_DIR)) return D9_SERVE_VIEWER_INSTALL_DIR;
#endif
    return NULL;
}
#endif

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

int d9_cmd_serve(int argc, char **argv) {
#if !defined(D9_HAVE_MHD) && defined(D9_SERVE_BUILT)
    char server[PATH_MAX], where[2 * PATH_MAX + 64];
    if (find_server(server, sizeof server, where, sizeof where)) {
        argv[0] = server; /* the same arguments: dial9-serve behaves as `dial9 serve` */
        execv(server, argv);
        fprintf(stderr, "dial9 serve: %s: %s\n", server, strerror(errno));
        return D9_EXIT_DATA;
    }
#endif
    enum { O_VIEWER_DIR = 256, O_REQUEST_TIMEOUT, O_IDLE_TIMEOUT, O_MAX_CONNECTIONS, O_MAX_PER_CLIENT, O_ALLOW_HOST };
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'},
        {"bind", required_argument, NULL, 'b'},
        {"viewer-dir", required_argument, NULL, O_VIEWER_DIR},
        {"request-timeout", required_argument, NULL, O_REQUEST_TIMEOUT},
        {"idle-timeout", required_argument, NULL, O_IDLE_TIMEOUT},
        {"max-connections", required_argument, NULL, O_MAX_CONNECTIONS},
        {"max-per-client", required_argument, NULL, O_MAX_PER_CLIENT},
        {"allow-host", required_argument, NULL, O_ALLOW_HOST},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    const char *bind = "127.0.0.1", *viewer = NULL;
    long port = DEFAULT_PORT;
    bool quiet = false;
    unsigned request_timeout = DEFAULT_REQUEST_TIMEOUT_S, idle_timeout = DEFAULT_IDLE_TIMEOUT_S,
             max_connections = DEFAULT_MAX_CONNECTIONS, max_per_client = DEFAULT_MAX_PER_CLIENT;
    char *allow_hosts[MAX_ALLOW_HOSTS]; /* pointers into argv */
    size_t allow_host_count = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":p:b:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': {
            char *end;
            port = strtol(optarg, &end, 10);
            if (!*optarg || *end || port < 0 || port > 65535) {
                fprintf(stderr, "dial9 serve: --port takes 0..65535\n");
                return D9_EXIT_USAGE;
            }
            break;
        }
        case 'b': bind = optarg; break;
        case O_VIEWER_DIR: viewer = optarg; break;
        case O_REQUEST_TIMEOUT:
            if (!parse_count("request-timeout", optarg, 1, 3600, &request_timeout)) return D9_EXIT_USAGE;
            break;
        case O_IDLE_TIMEOUT:
            if (!parse_count("idle-timeout", optarg, 1, 86400, &idle_timeout)) return D9_EXIT_USAGE;
            break;
        case O_MAX_CONNECTIONS: /* under the usual limit of 1024 open files */
            if (!parse_count("max-connections", optarg, 1, 900, &max_connections)) return D9_EXIT_USAGE;
            break;
        case O_ALLOW_HOST:
            if (!*optarg || strlen(optarg) > 255 || allow_host_count == MAX_ALLOW_HOSTS) {
                fprintf(stderr, "dial9 serve: --allow-host takes a host name (or '*'), at most %d times\n",
                        MAX_ALLOW_HOSTS);
                return D9_EXIT_USAGE;
            }
            allow_hosts[allow_host_count++] = optarg;
            break;
        case O_MAX_PER_CLIENT:
            if (!parse_count("max-per-client", optarg, 1, 900, &max_per_client)) return D9_EXIT_USAGE;
            break;
        case 'q': quiet = true; break;
        case 'h': serve_usage(stdout); return D9_EXIT_OK;
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
#ifdef D9_HAVE_MHD
    char buf[PATH_MAX];
    if (viewer && !has_index(viewer)) {
        fprintf(stderr, "dial9 serve: %s: no index.html there\n", viewer);
        return D9_EXIT_USAGE;
    }
    if (!viewer && !(viewer = find_viewer(buf, sizeof buf)))
        fprintf(stderr, "dial9 serve: viewer not found (use --viewer-dir): serving the API only\n");
    d9_serve_opts o = {.dir = argv[optind], .bind = bind, .port = (unsigned)port, .viewer_dir = viewer,
                       .quiet = quiet, .request_timeout_s = request_timeout, .idle_timeout_s = idle_timeout,
                       .max_connections = max_connections, .max_per_client = max_per_client,
                       .allow_hosts = allow_hosts, .allow_host_count = allow_host_count};
    return d9_serve_run(&o);
#else
    (void)bind;
    (void)viewer;
    (void)quiet;
    (void)request_timeout;
    (void)idle_timeout;
    (void)max_connections;
    (void)max_per_client;
    (void)allow_hosts;
#ifdef D9_SERVE_BUILT
    fprintf(stderr, "dial9 serve: the server, " SERVER_NAME ", is not in %s (it is built and installed "
                    "with dial9: reinstall, or use the dial9 of the build directory)\n", where);
#else
    fprintf(stderr, "dial9 serve: this dial9 was built without libmicrohttpd (install libmicrohttpd-dev "
                    "and rebuild)\n");
#endif
    return D9_EXIT_DATA;
#endif
}
