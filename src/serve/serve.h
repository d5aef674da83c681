/* `dial9 serve`: an HTTP server (libmicrohttpd) for the viewer and the traces of a directory
 * (docs/serve.md). Built only when libmicrohttpd is found, into the dial9-serve executable
 * (cmake/serve.cmake defines D9_HAVE_MHD there); cmd_serve.c parses the options. */
#ifndef D9_SERVE_SERVE_H
#define D9_SERVE_SERVE_H

#include <stdbool.h>

typedef struct d9_serve_opts {
    const char *dir;        /* the traces */
    const char *bind;       /* numeric address, default 127.0.0.1 */
    unsigned port;          /* 0: any free port (printed) */
    const char *viewer_dir; /* NULL: no viewer, only the API */
    bool quiet;             /* no request log */
    unsigned request_timeout_s; /* a whole request must arrive within this (conn_guard.h) */
    unsigned idle_timeout_s;    /* libmicrohttpd's: a connection with no traffic closes */
    unsigned max_connections, max_per_client;
    char *const *allow_hosts;   /* Host names answered besides localhost and addresses (host_check.h) */
    size_t allow_host_count;
} d9_serve_opts;

/* Serve until SIGINT or SIGTERM. Returns the exit code (D9_EXIT_*). */
int d9_serve_run(const d9_serve_opts *o);

#endif
