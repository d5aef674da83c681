/* A memory-mode dump's segment bytes (src/core/flight_dump_direct.c): every byte lands, in
 * order, whether the buffer is page-aligned (the body with O_DIRECT, the tail plainly), not
 * aligned, or small (plainly); a write error is returned. On a disk filesystem the direct body
 * is checked to have bypassed the page cache (mincore of the file: its pages not resident), the
 * plain tail not; on tmpfs, which has only a page cache, that part is skipped. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "check.h"
#include "test_rng.h"
#include "core/flight_dump_direct.h"
#include "trace_files_util.h"

static uint8_t *pattern(size_t len, unsigned seed) {
    uint8_t *b = aligned_alloc(4096, (len + 4096) / 4096 * 4096 + 4096);
    d9t_rng rng = d9t_rng_seeded(seed);
    for (size_t i = 0; i < len + 4096; i++) b[i] = (uint8_t)d9t_rng_next(&rng);
    return b;
}

/* Write data[0, len) to a new file at path; 0 or -errno. */
static int write_new(const char *path, const uint8_t *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    int rc = d9_dump_write_bytes(fd, data, len);
    close(fd);
    return rc;
}

static bool same_bytes(const char *path, const uint8_t *data, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    bool ok = fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size == len;
    uint8_t buf[65536];
    for (size_t off = 0; ok && off < len;) {
        ssize_t n = read(fd, buf, sizeof buf);
        ok = n > 0 && memcmp(buf, data + off, (size_t)n) == 0;
        off += n > 0 ? (size_t)n : 0;
    }
    if (fd >= 0) close(fd);
    return ok;
}

/* How many of the file's pages in [from, to) are in the page cache (before anything reads it). */
static size_t resident_pages(const char *path, size_t from, size_t to) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return SIZE_MAX;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return SIZE_MAX;
    size_t pages = ((size_t)st.st_size + 4095) / 4096, n = 0;
    unsigned char *v = malloc(pages);
    if (mincore(m, (size_t)st.st_size, v) == 0)
        for (size_t p = from / 4096; p < pages && p < (to + 4095) / 4096; p++) n += v[p] & 1;
    else
        n = SIZE_MAX;
    free(v);
    munmap(m, (size_t)st.st_size);
    return n;
}

int main(void) {
    char *dir = d9t_mkdtemp("dump-direct");
    char path[512];
    struct statfs fs;
    bool page_cache_only = statfs(dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC;

    /* a sealed segment's buffer: page-aligned, 5 MiB and a partial page */
    size_t len = (5u << 20) + 123;
    uint8_t *seg = pattern(len, 1);
    snprintf(path, sizeof path, "%s/aligned", dir);
    CHECK(write_new(path, seg, len) == 0);
    if (page_cache_only) {
        printf("test_flight_dump_direct: %s is tmpfs: the page-cache check is skipped\n", dir);
    } else {
        CHECK_EQ_U64(resident_pages(path, 0, len / 4096 * 4096), 0); /* the body went direct */
        CHECK_EQ_U64(resident_pages(path, len / 4096 * 4096, len), 1); /* the tail plainly */
    }
    CHECK(same_bytes(path, seg, len));

    /* not page-aligned: all plainly, all there */
    snprintf(path, sizeof path, "%s/unaligned", dir);
    CHECK(write_new(path, seg + 1, (3u << 20) + 5) == 0);
    CHECK(same_bytes(path, seg + 1, (3u << 20) + 5));

    /* small, and exactly whole pages */
    snprintf(path, sizeof path, "%s/small", dir);
    CHECK(write_new(path, seg, 1000) == 0);
    CHECK(same_bytes(path, seg, 1000));
    snprintf(path, sizeof path, "%s/whole", dir);
    CHECK(write_new(path, seg, 2u << 20) == 0);
    CHECK(same_bytes(path, seg, 2u << 20));

    /* a file not open for writing: the error comes back */
    int ro = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(d9_dump_write_bytes(ro, seg, len) == -EBADF);
    close(ro);

    free(seg);
    if (d9t_failed == 0) d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_flight_dump_direct");
}
