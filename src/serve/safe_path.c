/* Request paths onto files under a root, without escaping it (see safe_path.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "serve/safe_path.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PATH_BYTES 1024
#define MAX_COMPONENTS 32

int d9_path_inside(const char *root_real, const char *real) {
    size_t n = strlen(root_real);
    if (n == 1 && root_real[0] == '/') return real[0] == '/';
    return strncmp(real, root_real, n) == 0 && (real[n] == '/' || real[n] == '\0');
}

/* Each component: non-empty, not starting with '.' (so neither "." nor ".." nor dot
 * files), no backslash or control characters. */
static int check_components(const char *p) {
    int count = 0;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) return D9_PATH_FORBIDDEN; /* "//": an absolute path inside the path */
        if (p[0] == '.') return D9_PATH_FORBIDDEN;
        for (size_t i = 0; i < len; i++)
            if (p[i] == '\\' || (unsigned char)p[i] < 0x20 || p[i] == 0x7f) return D9_PATH_FORBIDDEN;
        if (++count > MAX_COMPONENTS) return D9_PATH_FORBIDDEN;
        if (!end) break;
        p = end + 1;
        if (!*p) break; /* a trailing slash: a directory */
    }
    return D9_PATH_OK;
}

int d9_safe_resolve(const char *root_real, const char *url_path, char **out) {
    *out = NULL;
    if (!url_path || url_path[0] != '/') return D9_PATH_FORBIDDEN;
    size_t len = strlen(url_path);
    if (len > MAX_PATH_BYTES) return D9_PATH_NOT_FOUND;
    const char *rel = url_path + 1;
    int rc = check_components(rel);
    if (rc != D9_PATH_OK) return rc;
    char *joined;
    bool dir = len == 1 || url_path[len - 1] == '/';
    if (asprintf(&joined, "%s/%s%s", root_real, rel, dir ? "index.html" : "") < 0) return D9_PATH_NOT_FOUND;
    char *real = realpath(joined, NULL);
    free(joined);
    if (!real) return D9_PATH_NOT_FOUND;
    if (!d9_path_inside(root_real, real)) {
        free(real);
        return D9_PATH_FORBIDDEN; /* a symlink out of the root */
    }
    struct stat st;
    if (stat(real, &st) != 0) {
        free(real);
        return D9_PATH_NOT_FOUND;
    }
    if (S_ISDIR(st.st_mode)) { /* "/dir" without the slash: its index.html */
        char *index;
        int n = asprintf(&index, "%s/index.html", real);
        free(real);
        if (n < 0) return D9_PATH_NOT_FOUND;
        real = realpath(index, NULL);
        free(index);
        if (!real) return D9_PATH_NOT_FOUND;
        if (!d9_path_inside(root_real, real)) {
            free(real);
            return D9_PATH_FORBIDDEN;
        }
        if (stat(real, &st) != 0) {
            free(real);
            return D9_PATH_NOT_FOUND;
        }
    }
    if (!S_ISREG(st.st_mode)) {
        free(real);
        return D9_PATH_NOT_FOUND;
    }
    *out = real;
    return D9_PATH_OK;
}
