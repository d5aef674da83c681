/* The trace directory and a run's directory, opened so that no other user can redirect them
 * (see trace_dir.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sinks/trace_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINKS 40 /* as the kernel's own limit on links followed in one lookup */

static bool trusted_owner(uid_t uid) { return uid == 0 || uid == geteuid(); }

/* "uid 1000 (alice)", or "uid 1000" when the name is not known. */
static void describe_uid(uid_t uid, char *out, size_t len) {
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
        snprintf(out, len, "uid %u (%s)", (unsigned)uid, found->pw_name);
    else
        snprintf(out, len, "uid %u", (unsigned)uid);
}

static int refuse(char *err, size_t errlen, int errnum, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(char *err, size_t errlen, int errnum, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    errno = errnum;
    return -1;
}

/* ssh's StrictModes for one directory on the way to (or of) the trace directory. */
static int check_dir(const struct stat *st, const char *shown, char *err, size_t errlen) {
    char owner[300], me[300];
    if (!S_ISDIR(st->st_mode))
        return refuse(err, errlen, ENOTDIR, "trace directory: %s is not a directory", shown);
    if (!trusted_owner(st->st_uid)) {
        describe_uid(st->st_uid, owner, sizeof owner);
        describe_uid(geteuid(), me, sizeof me);
        return refuse(err, errlen, EPERM,
                      "trace directory %s is owned by %s, not by root or you (%s): its owner could "
                      "redirect the trace files. Remove it, or use a directory of yours (DIAL9_TRACE_DIR, "
                      "dial9 run -d)",
                      shown, owner, me);
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return refuse(err, errlen, EPERM,
                      "trace directory %s is writable by %s (mode %04o) and not sticky: another user could "
                      "replace the trace files. Run `chmod go-w %s`, or use another directory "
                      "(DIAL9_TRACE_DIR, dial9 run -d)",
                      shown, (st->st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned)(st->st_mode & 07777),
                      shown);
    return 0;
}

/* Append "/name" to the walked path shown in messages (cut short when too long). */
static void walk_into(char *walked, size_t size, const char *name) {
    size_t n = strlen(walked);
    if (n == 1 && walked[0] == '/') n = 0;
    snprintf(walked + n, size - n, "/%s", name);
}

static int walk_open(const char *path, bool create, char *err, size_t errlen) {
    if (!path || !*path) return refuse(err, errlen, EINVAL, "trace directory: no path given");
    /* What is left to walk, from "/" (a relative path starts at the working directory's real path). */
    char rest[PATH_MAX];
    if (path[0] == '/') {
        if (snprintf(rest, sizeof rest, "%s", path) >= (int)sizeof rest)
            return refuse(err, errlen, ENAMETOOLONG, "trace directory: %s: path too long", path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return refuse(err, errlen, errno, "trace directory: %s: working directory: %s", path, strerror(errno));
        if (snprintf(rest, sizeof rest, "%s/%s", cwd, path) >= (int)sizeof rest)
            return refuse(err, errlen, ENAMETOOLONG, "trace directory: %s: path too long", path);
    }
    char walked[PATH_MAX] = "/";
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return refuse(err, errlen, errno, "trace directory: /: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || check_dir(&st, "/", err, errlen) != 0) goto fail;
    size_t pos = 0;
    int links = 0;
    for (;;) {
        while (rest[pos] == '/') pos++;
        if (!rest[pos]) break;
        size_t len = strcspn(rest + pos, "/");
        char name[NAME_MAX + 1];
        if (len > NAME_MAX) {
            refuse(err, errlen, ENAMETOOLONG, "trace directory: %s: a name in it is too long", path);
            goto fail;
        }
        memcpy(name, rest + pos, len);
        name[len] = '\0';
        pos += len;
        if (strcmp(name, ".") == 0) continue;
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            /* mode as umask allows: never more than this */
            if (mkdirat(fd, name, D9_TRACE_DIR_MODE) != 0 && errno != EEXIST) {
                walk_into(walked, sizeof walked, name);
                refuse(err, errlen, errno, "trace directory: cannot create %s: %s", walked, strerror(errno));
                goto fail;
            }
            next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (next < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            int open_errno = errno;
            /* A symbolic link, in a directory that passed: followed when it is root's or ours
             * (as the kernel's protected_symlinks does in sticky directories), its target walked
             * and checked like the rest. */
            char target[PATH_MAX];
            ssize_t n = readlinkat(fd, name, target, sizeof target - 1);
            walk_into(walked, sizeof walked, name);
            if (n < 0) {
                refuse(err, errlen, open_errno, "trace directory: %s: %s", walked, strerror(open_errno));
                goto fail;
            }
            target[n] = '\0';
            if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !trusted_owner(st.st_uid)) {
                char owner[300];
                describe_uid(st.st_uid, owner, sizeof owner);
                refuse(err, errlen, EPERM,
                       "trace directory %s is a symbolic link owned by %s, not by root or you: not followed. "
                       "Remove it, or use a directory of yours (DIAL9_TRACE_DIR, dial9 run -d)",
                       walked, owner);
                goto fail;
            }
            if (++links > MAX_LINKS) {
                refuse(err, errlen, ELOOP, "trace directory: %s: too many symbolic links", path);
                goto fail;
            }
            char spliced[PATH_MAX];
            if (snprintf(spliced, sizeof spliced, "%s/%s", target, rest + pos) >= (int)sizeof spliced) {
                refuse(err, errlen, ENAMETOOLONG, "trace directory: %s: path too long", path);
                goto fail;
            }
            memcpy(rest, spliced, strlen(spliced) + 1);
            pos = 0;
            if (target[0] == '/') { /* walked again from the root */
                close(fd);
                fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) return refuse(err, errlen, errno, "trace directory: /: %s", strerror(errno));
                snprintf(walked, sizeof walked, "/");
            } else {
                char *slash = strrchr(walked, '/'); /* the link's own directory again */
                if (slash == walked) walked[1] = '\0';
                else if (slash) *slash = '\0';
            }
            continue;
        }
        walk_into(walked, sizeof walked, name);
        if (next < 0) {
            refuse(err, errlen, errno, "trace directory: %s: %s", walked, strerror(errno));
            goto fail;
        }
        close(fd);
        fd = next;
        if (fstat(fd, &st) != 0) {
            refuse(err, errlen, errno, "trace directory: %s: %s", walked, strerror(errno));
            goto fail;
        }
        if (check_dir(&st, walked, err, errlen) != 0) goto fail;
    }
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

int d9_run_dir_open(int trace_fd, const char *name, const char *shown, char *err, size_t errlen) {
    /* An existing one is reused (a run id given again): it must be ours, as checked below. */
    if (mkdirat(trace_fd, name, D9_RUN_DIR_MODE) != 0 && errno != EEXIST)
        return refuse(err, errlen, errno, "cannot create %s: %s", shown, strerror(errno));
    int fd = openat(trace_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return refuse(err, errlen, e, "cannot open %s: %s", shown,
                      e == ELOOP || e == ENOTDIR ? "not a directory (a symbolic link?): not followed" : strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return refuse(err, errlen, e, "cannot open %s: %s", shown, strerror(e));
    }
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        char owner[300];
        describe_uid(st.st_uid, owner, sizeof owner);
        close(fd);
        return refuse(err, errlen, EPERM,
                      "run directory %s belongs to %s (mode %04o), not to this process alone: another user "
                      "made it; not recording there",
                      shown, owner, (unsigned)(st.st_mode & 07777));
    }
    return fd;
}

/* The walk's messages name the directory where it stopped; where that is not the path given
 * (a parent, or a link's target), the path given is named too, so a user finds the setting. */
int d9_trace_dir_open(const char *path, bool create, char *err, size_t errlen) {
    int fd = walk_open(path, create, err, errlen);
    if (fd >= 0 || !path || !*path || !err || !errlen || strstr(err, path)) return fd;
    int e = errno;
    static const char prefix[] = "trace directory: ";
    const char *detail = strncmp(err, prefix, sizeof prefix - 1) == 0 ? err + sizeof prefix - 1 : err;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", detail);
    snprintf(err, errlen, "trace directory %s: %s", path, copy);
    errno = e;
    return -1;
}
