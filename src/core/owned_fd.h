/* File descriptors the library keeps open for a long time (segment files, perf events,
 * schedstat) may be closed behind our back by a program that closes every fd, and the number
 * reused for one of its own files. We remember what each fd was opened on and never close (or
 * write to) a number that now names something else. */
#ifndef D9_CORE_OWNED_FD_H
#define D9_CORE_OWNED_FD_H

#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct d9_fd_id {
    dev_t dev;
    ino_t ino;
} d9_fd_id;

static inline d9_fd_id d9_fd_identify(int fd) {
    struct stat st;
    d9_fd_id id = {0, 0};
    if (fd >= 0 && fstat(fd, &st) == 0) {
        id.dev = st.st_dev;
        id.ino = st.st_ino;
    }
    return id;
}

static inline bool d9_fd_still_ours(int fd, d9_fd_id id) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id.dev && st.st_ino == id.ino;
}

static inline void d9_fd_close_if_ours(int fd, d9_fd_id id) {
    if (d9_fd_still_ours(fd, id)) close(fd);
}

#endif
