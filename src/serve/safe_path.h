/* Mapping a request path onto a file under a root directory without ever leaving it: the
 * path is checked component by component ("..", ".", dot files, empty components and
 * backslashes are refused before touching the file system), then opened relative to the
 * root's directory fd with no symlink followed anywhere (open_beneath.h), so neither a
 * symlink pointing out nor a directory swapped for one while the request runs can lead
 * outside. */
#ifndef D9_SERVE_SAFE_PATH_H
#define D9_SERVE_SAFE_PATH_H

#include <stdbool.h>
#include <sys/stat.h>

enum {
    D9_PATH_OK = 0,
    D9_PATH_FORBIDDEN = 403, /* a traversal attempt, or a symlink on the way */
    D9_PATH_NOT_FOUND = 404,
};

/* root_fd: the root directory. url_path: the decoded request path ("/a/b.js"); "/" and paths
 * ending in "/" (or naming a directory) mean "index.html" in that directory. On D9_PATH_OK,
 * *fd is an open regular file inside the root (the caller closes it), *st its fstat and
 * *is_index whether it is such an index.html. */
int d9_safe_open(int root_fd, const char *url_path, int *fd, struct stat *st, bool *is_index);

#endif
