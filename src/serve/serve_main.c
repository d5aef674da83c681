/* dial9-serve: `dial9 serve` as an executable of its own, so that only it loads libmicrohttpd
 * (`dial9 serve` execs this with its arguments, src/cli/cmd_serve.c): the options
 * (serve_options.h), the viewer's directory, then the server (serve.h). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/exit_codes.h"
#include "serve/serve.h"

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
int main(int argc, char **argv) {
    d9_serve_args args;
    int rc = d9_serve_parse_args(argc, argv, &args);
    if (rc >= 0) return rc;
    d9_serve_opts *o = &args.opts;
    char buf[PATH_MAX];
    if (o->viewer_dir && !has_index(o->viewer_dir)) {
        fprintf(stderr, "dial9 serve: %s: no index.html there\n", o->viewer_dir);
        return D9_EXIT_USAGE;
    }
    if (!o->viewer_dir && !(o->viewer_dir = find_viewer(buf, sizeof buf)))
        fprintf(stderr, "dial9 serve: viewer not found (use --viewer-dir): serving the API only\n");
    return d9_serve_run(o);
}
