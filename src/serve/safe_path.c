/* Request paths onto files under a root, without escaping it (see safe_path.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "serve/safe_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/open_beneath.h"

#define MAX_PATH_BYTES 1024
#define MAX_COMPONENTS 32

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

static int status_of(int err) {
    return err == ELOOP || err == EXDEV ? D9_PATH_FORBIDDEN : D9_PATH_NOT_FOUND;
}

int d9_safe_open(int root_fd, const char *url_path, int *fd, struct stat *st, bool *is_index) {
    *fd = -1;
    *is_index = false;
    if (!url_path || url_path[0] != '/') return D9_PATH_FORBIDDEN;
    size_t len = strlen(url_path);
    if (len > MAX_PATH_BYTES) return D9_PATH_NOT_FOUND;
    const char *rel = url_path + 1;
    int rc = check_components(rel);
    if (rc != D9_PATH_OK) return rc;
    char *path;
    bool dir = len == 1 || url_path[len - 1] == '/';
    if (asprintf(&path, "%s%s", rel, dir ? "index.html" : "") < 0) return D9_PATH_NOT_FOUND;
    int f = d9_open_regular_beneath(root_fd, path, st);
    int err = errno;
    free(path);
    if (f < 0 && err == EISDIR) { /* "/dir" without the slash: its index.html */
        dir = true;
        if (asprintf(&path, "%s/index.html", rel) < 0) return D9_PATH_NOT_FOUND;
        f = d9_open_regular_beneath(root_fd, path, st);
        err = errno;
        free(path);
    }
    if (f < 0) return status_of(err);
    *fd = f;
    *is_index = dir;
    return D9_PATH_OK;
}
