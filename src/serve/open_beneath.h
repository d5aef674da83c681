/* Opening a file below a directory without ever leaving it, whatever happens to the file
 * system meanwhile: every path is resolved relative to a directory fd opened once, and no
 * symlink is followed at any component, so swapping a directory for a symlink while a request
 * is being answered (rename(2) races) cannot lead outside. Linux's openat2(2) with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS does this in the kernel; where it is missing (kernels
 * before 5.6, seccomp filters that refuse it) the path is walked one component at a time with
 * openat(O_NOFOLLOW | O_DIRECTORY), which is equally safe: each step is relative to the fd of
 * the directory opened by the step before.
 *
 * D9_SERVE_RESOLVE=walk in the environment forces the walk (the tests run both). */
#ifndef D9_SERVE_OPEN_BENEATH_H
#define D9_SERVE_OPEN_BENEATH_H

#include <sys/stat.h>

/* rel: a relative path ("a/b/trace.0.bin"); empty, "." and ".." components and a leading "/"
 * are refused (EXDEV), as is a symlink anywhere on the way (ELOOP). flags: O_RDONLY or
 * O_RDONLY | O_DIRECTORY; O_CLOEXEC, O_NOFOLLOW and O_NONBLOCK (a FIFO must not block the
 * server) are added. The fd, or -1 with errno set. */
int d9_open_beneath(int dirfd, const char *rel, int flags);

/* d9_open_beneath, then fstat: the fd of a regular file (O_NONBLOCK cleared) with *st filled,
 * or -1 with errno (EISDIR for a directory, ENOENT for other kinds: FIFOs, devices...). */
int d9_open_regular_beneath(int dirfd, const char *rel, struct stat *st);

/* "openat2" or "walk": what d9_open_beneath uses now (it switches to the walk for good when
 * the kernel refuses openat2). */
const char *d9_open_beneath_method(void);

#endif
