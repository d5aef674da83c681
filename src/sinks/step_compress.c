/* gzip at level 1: dial9's speed setting ("fast"); trace data compresses well even so, and
 * the background thread must keep up with the writer on a busy host. */
#include "sinks/step_compress.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sinks/libz_loader.h"

#define PIECE (64 * 1024)

static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int d9_step_compress_gzip(const char *path, char *gz_path, size_t gz_path_len, uint64_t *gz_size,
                          bool (*give_up)(void *), void *ctx, char *err, size_t errlen) {
    const d9_libz *z = d9_libz_get();
    if (!z) {
        snprintf(err, errlen, "%s", d9_libz_error());
        return -1;
    }
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
    char tmp[4096];
    if (snprintf(gz_path, gz_path_len, "%s.gz", path) >= (int)gz_path_len ||
        snprintf(tmp, sizeof tmp, "%.*s.%s.gz.tmp", (int)dir_len, path, path + dir_len) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        return -1;
    }
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
        snprintf(err, errlen, "create %s: %s", tmp, strerror(errno));
        close(in);
        return -1;
    }
    unsigned char *ibuf = malloc(PIECE), *obuf = malloc(PIECE);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    bool zinit = false;
    int rc = -1;
    if (!ibuf || !obuf) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* windowBits 15 + 16: a gzip wrapper; memLevel 8: about 256 KiB of state */
    if (z->deflateInit2_(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof zs) != Z_OK) {
        snprintf(err, errlen, "deflateInit2 failed");
        goto done;
    }
    zinit = true;
    for (bool eof = false; !eof;) {
        if (give_up && give_up(ctx)) {
            snprintf(err, errlen, "given up");
            goto done;
        }
        ssize_t n = read(in, ibuf, PIECE);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(err, errlen, "read %s: %s", path, strerror(errno));
            goto done;
        }
        eof = n == 0;
        zs.next_in = ibuf;
        zs.avail_in = (uInt)n;
        do {
            zs.next_out = obuf;
            zs.avail_out = PIECE;
            int zr = z->deflate(&zs, eof ? Z_FINISH : Z_NO_FLUSH);
            if (zr == Z_STREAM_ERROR) {
                snprintf(err, errlen, "deflate failed");
                goto done;
            }
            if (write_all(out, obuf, PIECE - zs.avail_out) != 0) {
                snprintf(err, errlen, "write %s: %s", tmp, strerror(errno));
                goto done;
            }
        } while (zs.avail_out == 0);
    }
    struct stat st;
    if (fstat(out, &st) != 0 || close(out) != 0) {
        out = -1;
        snprintf(err, errlen, "close %s: %s", tmp, strerror(errno));
        goto done;
    }
    out = -1;
    /* The .gz appears before the .bin goes: a reader may see both for a moment, never neither. */
    if (rename(tmp, gz_path) != 0) {
        snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
        goto done;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "unlink %s: %s", path, strerror(errno));
        unlink(gz_path); /* keep one copy, the original */
        goto done;
    }
    *gz_size = (uint64_t)st.st_size;
    rc = 0;
done:
    if (zinit) z->deflateEnd(&zs);
    free(ibuf);
    free(obuf);
    close(in);
    if (out >= 0) close(out);
    if (rc != 0) unlink(tmp);
    return rc;
}
