/* Opening trace files without blocking on FIFOs and devices (see dec_open_regular.h). */
#include "format/dec_open_regular.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *d9_file_kind_name(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

static int refuse(const char *path, mode_t mode, char *err, size_t errlen) {
    if (err && errlen)
        snprintf(err, errlen, "%s: not a regular file (%s); trace files are regular files", path,
                 d9_file_kind_name(mode));
    errno = EINVAL;
    return -1;
}

static int failed(const char *path, char *err, size_t errlen) {
    int e = errno;
    if (err && errlen) snprintf(err, errlen, "%s: %s", path, strerror(e));
    errno = e;
    return -1;
}

int d9_open_regular(const char *path, int flags, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0) return failed(path, err, errlen);
    if (!S_ISREG(st.st_mode)) return refuse(path, st.st_mode, err, errlen);
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return failed(path, err, errlen);
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return failed(path, err, errlen);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(path, st.st_mode, err, errlen);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* regular files never block anyway */
    return fd;
}
