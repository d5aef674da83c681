/* Files below a directory fd, never leaving it (see open_beneath.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "serve/open_beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#define MAX_COMPONENT_BYTES 255 /* NAME_MAX */

enum { METHOD_UNKNOWN, METHOD_OPENAT2, METHOD_WALK };
static int method = METHOD_UNKNOWN; /* one server thread; a race would only pick twice */

static int chosen_method(void) {
    if (method == METHOD_UNKNOWN) {
        const char *force = getenv("D9_SERVE_RESOLVE");
#ifdef SYS_openat2
        method = force && !strcmp(force, "walk") ? METHOD_WALK : METHOD_OPENAT2;
#else
        (void)force;
        method = METHOD_WALK;
#endif
    }
    return method;
}

const char *d9_open_beneath_method(void) {
    return chosen_method() == METHOD_OPENAT2 ? "openat2" : "walk";
}

/* The checks both methods make before touching the file system, so that they agree. */
static bool well_formed(const char *rel) {
    if (!*rel || rel[0] == '/') return false;
    for (const char *p = rel; *p;) {
        const char *end = strchrnul(p, '/');
        size_t len = (size_t)(end - p);
        if (len == 0 || len > MAX_COMPONENT_BYTES) return false;
        if (p[0] == '.' && (len == 1 || (len == 2 && p[1] == '.'))) return false;
        if (!*end) break;
        p = end + 1;
        if (!*p) return false; /* a trailing slash */
    }
    return true;
}

/* One component at a time, each opened relative to the one before and never through a
 * symlink. */
static int walk_open(int dirfd, const char *rel, int flags) {
    int cur = dirfd;
    const char *p = rel;
    for (;;) {
        const char *end = strchrnul(p, '/');
        char name[MAX_COMPONENT_BYTES + 1];
        size_t len = (size_t)(end - p);
        memcpy(name, p, len);
        name[len] = '\0';
        bool last = !*end;
        int next = openat(cur, name, last ? flags : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        int err = errno;
        if (next < 0 && err == ENOTDIR) {
            /* O_NOFOLLOW | O_DIRECTORY says ENOTDIR for a symlink: say ELOOP as openat2 does */
            struct stat st;
            if (fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) err = ELOOP;
        }
        if (cur != dirfd) close(cur);
        if (next < 0) {
            errno = err;
            return -1;
        }
        if (last) return next;
        cur = next;
        p = end + 1;
    }
}

int d9_open_beneath(int dirfd, const char *rel, int flags) {
    flags |= O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    if (!well_formed(rel)) {
        errno = EXDEV;
        return -1;
    }
#ifdef SYS_openat2
    if (chosen_method() == METHOD_OPENAT2) {
        struct open_how how = {
            .flags = (uint64_t)flags,
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != E2BIG)) return fd;
        if (errno == EPERM) { /* a seccomp filter, or a real permission problem: the walk tells */
            int fd2 = walk_open(dirfd, rel, flags);
            if (fd2 >= 0) method = METHOD_WALK;
            return fd2;
        }
        method = METHOD_WALK; /* no openat2 in this kernel */
    }
#endif
    return walk_open(dirfd, rel, flags);
}

int d9_open_regular_beneath(int dirfd, const char *rel, struct stat *st) {
    int fd = d9_open_beneath(dirfd, rel, O_RDONLY);
    if (fd < 0) return -1;
    int err = 0;
    if (fstat(fd, st) != 0) err = errno;
    else if (!S_ISREG(st->st_mode)) err = S_ISDIR(st->st_mode) ? EISDIR : ENOENT;
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}
