/* Mapping a request path onto a file under a root directory without ever leaving it: the
 * path is checked component by component ("..", ".", dot files, empty components and
 * backslashes are refused before touching the file system), then resolved with realpath(3)
 * and accepted only when the result lies inside the root's real path, so a symlink that
 * points outside is refused too. */
#ifndef D9_SERVE_SAFE_PATH_H
#define D9_SERVE_SAFE_PATH_H

enum {
    D9_PATH_OK = 0,
    D9_PATH_FORBIDDEN = 403, /* a traversal attempt, or it resolves outside the root */
    D9_PATH_NOT_FOUND = 404,
};

/* root_real: the root's real path. url_path: the decoded request path ("/a/b.js"); "/" and
 * paths ending in "/" mean "index.html" in that directory. On D9_PATH_OK *out is the file's
 * real path (malloc'ed): a regular file inside the root. */
int d9_safe_resolve(const char *root_real, const char *url_path, char **out);

/* Whether a real path lies inside root_real (or is it). */
int d9_path_inside(const char *root_real, const char *real);

#endif
