/* A dump's segments written with O_DIRECT (flight_dump_direct.h). A plain write of 600 MB
 * into the page cache cost this 2-CPU guest 1.45 s of system time (allocating and copying
 * every page: dd, 640 MiB); O_DIRECT hands the segment's own pages to the disk, 0.3-0.4 s of
 * system time, and the device's time overlaps nothing the CPU must do. The segment buffers
 * are page-aligned (sinks/segment_buffer.c), so all but the last partial page goes direct. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/flight_dump_direct.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

/* Offsets, lengths and the buffer's address a direct write needs aligned: a page covers the
 * 512-byte and 4 KiB logical blocks of the disks it runs on. */
#define DIRECT_ALIGN ((size_t)4096)
/* Below this a segment is written plainly: direct I/O's fixed cost is not worth it. */
#define DIRECT_MIN ((size_t)1 << 20)
/* One write at most: the kernel pins this much of the buffer at a time. */
#define DIRECT_CHUNK ((size_t)64 << 20)

int d9_dump_write_plain(int fd, const void *data, size_t len) {
    const uint8_t *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? -errno : -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static bool set_direct(int fd, bool on) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0) return false;
    return fcntl(fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) == 0;
}

int d9_dump_write_bytes(int fd, const uint8_t *data, size_t len) {
    size_t body = len / DIRECT_ALIGN * DIRECT_ALIGN, done = 0;
    if (len >= DIRECT_MIN && (uintptr_t)data % DIRECT_ALIGN == 0 && set_direct(fd, true)) {
        while (done < body) {
            size_t want = body - done < DIRECT_CHUNK ? body - done : DIRECT_CHUNK;
            ssize_t n = write(fd, data + done, want);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno != EINVAL) {
                int e = -errno;
                (void)set_direct(fd, false);
                return e;
            }
            /* EINVAL: the filesystem refuses direct I/O after all; a short write leaves the
             * offset unaligned: the rest goes plainly either way */
            if (n <= 0 || (size_t)n % DIRECT_ALIGN != 0) {
                if (n > 0) done += (size_t)n;
                break;
            }
            done += (size_t)n;
        }
        if (!set_direct(fd, false)) return -errno;
    }
    return d9_dump_write_plain(fd, data + done, len - done);
}
