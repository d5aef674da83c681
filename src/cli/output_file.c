/* Result files of the commands, replaced whole or written in place (see output_file.h). */
#include "cli/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static mode_t default_mode(void) {
    mode_t mask = umask(0); /* the CLI is single-threaded: read and put back */
    umask(mask);
    return 0666 & ~mask;
}

static int fail(d9_output_file *o, char *err, size_t errlen, const char *what, int e) {
    snprintf(err, errlen, "%s: %s", what, strerror(e));
    d9_output_abort(o);
    return -1;
}

int d9_output_open(d9_output_file *o, const char *path, char *err, size_t errlen) {
    *o = (d9_output_file){.fd = -1};
    struct stat st;
    bool exists = stat(path, &st) == 0; /* follows a symlink: what it names counts */
    if (!exists && errno != ENOENT) return fail(o, err, errlen, path, errno);
    if (exists && S_ISDIR(st.st_mode)) return fail(o, err, errlen, path, EISDIR);
    if (exists && !S_ISREG(st.st_mode)) {
        o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (o->fd < 0) return fail(o, err, errlen, path, errno);
        o->path = strdup(path);
        if (!o->path) return fail(o, err, errlen, path, ENOMEM);
        return 0;
    }
    /* A symlink to a regular file: the file is replaced, the link stays. A dangling one (or no
     * file yet) is replaced by the new file. */
    o->path = exists ? realpath(path, NULL) : strdup(path);
    if (!o->path) return fail(o, err, errlen, path, errno ? errno : ENOMEM);
    if (asprintf(&o->tmp, "%s.tmp.XXXXXX", o->path) < 0) {
        o->tmp = NULL;
        return fail(o, err, errlen, path, ENOMEM);
    }
    o->fd = mkostemp(o->tmp, O_CLOEXEC); /* O_EXCL: never an existing name, never a symlink */
    if (o->fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "%s (its temporary file)", o->path);
        return fail(o, err, errlen, what, e);
    }
    if (fchmod(o->fd, exists ? (st.st_mode & 07777) : default_mode()) != 0)
        return fail(o, err, errlen, o->tmp, errno);
    return 0;
}

int d9_output_commit(d9_output_file *o, char *err, size_t errlen) {
    int fd = o->fd;
    o->fd = -1;
    if (close(fd) != 0) return fail(o, err, errlen, o->tmp ? o->tmp : o->path, errno);
    if (o->tmp && rename(o->tmp, o->path) != 0) return fail(o, err, errlen, o->path, errno);
    free(o->tmp);
    o->tmp = NULL; /* in place now: an abort after this removes nothing */
    d9_output_abort(o);
    return 0;
}

void d9_output_abort(d9_output_file *o) {
    if (o->fd >= 0) close(o->fd);
    if (o->tmp) unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    *o = (d9_output_file){.fd = -1};
}
