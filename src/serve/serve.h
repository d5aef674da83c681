/* `dial9 serve`: an HTTP server (libmicrohttpd) for the viewer and the traces of a directory
 * (docs/serve.md). Built only when libmicrohttpd is found, into the dial9-serve executable
 * (cmake/serve.cmake); serve_options.c parses the options, serve_main.c is its main. */
#ifndef D9_SERVE_SERVE_H
#define D9_SERVE_SERVE_H

#include "serve/serve_options.h" /* d9_serve_opts */

/* Serve until SIGINT or SIGTERM. Returns the exit code (D9_EXIT_*). */
int d9_serve_run(const d9_serve_opts *o);

#endif
