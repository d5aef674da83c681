/* Writing one dump directory (flight_dump.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/flight_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/segment_name.h"
#include "core/flight_dump_direct.h"
#include "core/hand_over_files.h"
#include "sinks/trace_dir.h"

int d9_dump_dir_create(const char *root, const char *name, d9_dump_dir *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->fd = -1;
    int root_fd = d9_trace_dir_open(root, true, err, errlen);
    if (root_fd < 0) return -1;
    snprintf(out->path, sizeof out->path, "%s/%s", root, name);
    struct stat st;
    if (fstatat(root_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) { /* never into an existing one */
        snprintf(err, errlen, "%s exists already", out->path);
        close(root_fd);
        return -1;
    }
    out->fd = d9_run_dir_open(root_fd, name, out->path, err, errlen);
    close(root_fd);
    if (out->fd < 0) return -1;
    int m = openat(out->fd, D9_DUMP_MARKER_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (m < 0) {
        snprintf(err, errlen, "cannot create %s/%s: %s", out->path, D9_DUMP_MARKER_NAME, strerror(errno));
        d9_dump_dir_abandon(out);
        return -1;
    }
    d9_files_owner_apply(m);
    close(m);
    return 0;
}

/* Write `name` whole: as name.active (or .tmp), renamed once complete; a segment's bytes
 * past the page cache (flight_dump_direct.c). */
static int write_file(d9_dump_dir *dd, const char *name, const char *partial, const void *data, size_t len,
                      bool segment) {
    int fd = openat(dd->fd, partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    d9_files_owner_apply(fd);
    int rc = segment ? d9_dump_write_bytes(fd, data, len) : d9_dump_write_plain(fd, data, len);
    if (close(fd) != 0 && rc == 0) rc = -errno;
    if (rc == 0 && renameat(dd->fd, partial, dd->fd, name) != 0) rc = -errno;
    if (rc != 0) (void)unlinkat(dd->fd, partial, 0);
    return rc;
}

int d9_dump_dir_add_bytes(d9_dump_dir *dd, uint64_t seq, const uint8_t *data, size_t len) {
    char name[D9_SEGMENT_NAME_MAX], partial[D9_SEGMENT_NAME_MAX];
    d9_segment_name_format(name, sizeof name, seq, D9_SEGMENT_SEALED);
    d9_segment_name_format(partial, sizeof partial, seq, D9_SEGMENT_ACTIVE);
    int rc = write_file(dd, name, partial, data, len, true);
    if (rc == 0) {
        dd->segments++;
        dd->bytes += len;
    }
    return rc;
}

static int copy_file(d9_dump_dir *dd, int run_fd, const char *name, uint64_t *size) {
    int in = openat(run_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0) return -errno;
    char partial[D9_SEGMENT_NAME_MAX + 8];
    snprintf(partial, sizeof partial, "%s.part", name);
    int out = openat(dd->fd, partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
        int e = errno;
        close(in);
        return -e;
    }
    d9_files_owner_apply(out);
    char buf[65536];
    int rc = 0;
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) rc = -errno;
        if (n <= 0) break;
        if ((rc = d9_dump_write_plain(out, buf, (size_t)n)) != 0) break;
        total += (uint64_t)n;
    }
    close(in);
    if (close(out) != 0 && rc == 0) rc = -errno;
    if (rc == 0 && renameat(dd->fd, partial, dd->fd, name) != 0) rc = -errno;
    if (rc != 0) (void)unlinkat(dd->fd, partial, 0);
    if (rc == 0) *size = total;
    return rc;
}

int d9_dump_dir_add_file(d9_dump_dir *dd, int run_fd, const char *name, uint64_t *size) {
    int rc = 0;
    if (linkat(run_fd, name, dd->fd, name, 0) != 0) {
        rc = -errno;
        if (rc == -EXDEV || rc == -EPERM) rc = copy_file(dd, run_fd, name, size);
    } else {
        struct stat st;
        *size = fstatat(dd->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)st.st_size : 0;
    }
    if (rc == 0) {
        dd->segments++;
        dd->bytes += *size;
    }
    return rc;
}

int d9_dump_dir_finish(d9_dump_dir *dd, const char *manifest, size_t len) {
    if (dd->fd < 0) return -EBADF;
    (void)fsync(dd->fd); /* the segments' names before the manifest that vouches for them */
    int rc = write_file(dd, D9_DUMP_MANIFEST_NAME, D9_DUMP_MANIFEST_NAME ".tmp", manifest, len, false);
    if (rc == 0) (void)fsync(dd->fd);
    close(dd->fd);
    dd->fd = -1;
    return rc;
}

void d9_dump_dir_abandon(d9_dump_dir *dd) {
    if (dd->fd >= 0) close(dd->fd);
    dd->fd = -1;
}
