/* `dial9 serve [--port P] [--bind ADDR] [--viewer-dir DIR] DIR`: the viewer and the traces of
 * DIR over HTTP (src/serve/, docs/serve.md). The server is its own executable, dial9-serve
 * (cmake/serve.cmake, built when libmicrohttpd is found), so that libmicrohttpd and the TLS
 * libraries behind it are loaded by it alone and not by every `dial9` command: `dial9 run`
 * would add their loading to the start of the program it records. So `dial9 serve` execs
 * dial9-serve (found next to the dial9 binary, or in the install tree's libexec directory);
 * when there is none it parses the options itself (serve/serve_options.h), for --help and
 * usage errors, and says why it cannot serve. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/crash_dump_names.h"
#include "serve/serve_options.h"

#ifdef D9_SERVE_BUILT
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

int d9_cmd_serve(int argc, char **argv) {
    for (int i = 1; i < argc; i++) /* a crash dump among its directories: named first */
        if (argv[i][0] != '-') d9_name_crash_dumps("serve", 1, &argv[i], stderr);
#ifdef D9_SERVE_BUILT
    char server[PATH_MAX], where[2 * PATH_MAX + 64];
    if (find_server(server, sizeof server, where, sizeof where)) {
        argv[0] = server; /* the same arguments: dial9-serve behaves as `dial9 serve` */
        execv(server, argv);
        fprintf(stderr, "dial9 serve: %s: %s\n", server, strerror(errno));
        return D9_EXIT_DATA;
    }
#endif
    d9_serve_args args;
    int rc = d9_serve_parse_args(argc, argv, &args);
    if (rc >= 0) return rc;
#ifdef D9_SERVE_BUILT
    fprintf(stderr, "dial9 serve: the server, " SERVER_NAME ", is not in %s (it is built and installed "
                    "with dial9: reinstall, or use the dial9 of the build directory)\n", where);
#else
    fprintf(stderr, "dial9 serve: this dial9 was built without libmicrohttpd (install libmicrohttpd-dev "
                    "and rebuild)\n");
#endif
    return D9_EXIT_DATA;
}
