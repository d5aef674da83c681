/* `dial9 serve`'s options: their usage text, defaults and parsing. Without libmicrohttpd: the
 * `dial9` command (cli/cmd_serve.c) links them too, to answer --help and bad arguments when
 * it has no server to exec, and dial9-serve (serve_main.c) parses its arguments with them. */
#ifndef D9_SERVE_SERVE_OPTIONS_H
#define D9_SERVE_SERVE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define D9_SERVE_MAX_ALLOW_HOSTS 64

typedef struct d9_serve_opts {
    const char *dir;        /* the traces */
    const char *bind;       /* numeric address, default 127.0.0.1 */
    unsigned port;          /* 0: any free port (printed) */
    const char *viewer_dir; /* NULL: no viewer, only the API */
    const char *selection;  /* --selection FILE (serve_selection.h): serve only what it names */
    const char *fetcher;    /* --fetcher DIAL9: runs `DIAL9 _serve-fetch` to fetch a selection's run */
    bool quiet;             /* no request log */
    unsigned request_timeout_s; /* a whole request must arrive within this (conn_guard.h) */
    unsigned idle_timeout_s;    /* libmicrohttpd's: a connection with no traffic closes */
    unsigned max_connections, max_per_client;
    unsigned max_decoded_mb;    /* the index decodes at most this much of one segment (trace_index.h) */
    char *const *allow_hosts;   /* Host names answered besides localhost and addresses (host_check.h) */
    size_t allow_host_count;
} d9_serve_opts;

/* The options and the room their --allow-host names take (pointers into argv). */
typedef struct d9_serve_args {
    d9_serve_opts opts; /* opts.allow_hosts points at hosts */
    char *hosts[D9_SERVE_MAX_ALLOW_HOSTS];
} d9_serve_args;

void d9_serve_usage(FILE *out);

/* Parse `dial9 serve [OPTIONS] TRACE_DIR` (argv[0] is the command's name) into a, the
 * defaults first. Returns -1 when the arguments are good (a->opts.dir is TRACE_DIR), else the
 * exit code to end with: D9_EXIT_OK after --help (printed), D9_EXIT_USAGE after a bad
 * argument (said on standard error). a->opts.viewer_dir is --viewer-dir's, or NULL. */
int d9_serve_parse_args(int argc, char **argv, d9_serve_args *a);

#endif
