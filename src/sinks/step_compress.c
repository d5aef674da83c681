/* The compress step (see step_compress.h): the file's part; the compressors are
 * compress_codec.h's. */
#include "sinks/step_compress.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/hand_over_files.h"
#include "sinks/compress_codec.h"
#include "sinks/trace_dir.h"
#include "common/libz_loader.h"
#include "common/libzstd_loader.h"

#define PIECE (64 * 1024)

const char *d9_compress_suffix(d9_compress_mode mode) {
    return mode == D9_COMPRESS_GZIP ? ".gz" : mode == D9_COMPRESS_ZSTD ? ".zst" : "";
}

const char *d9_compress_unavailable(d9_compress_mode mode) {
    if (mode == D9_COMPRESS_GZIP) return d9_libz_get() ? NULL : d9_libz_error();
    if (mode == D9_COMPRESS_ZSTD) return d9_libzstd_get() ? NULL : d9_libzstd_error();
    return NULL;
}

static int write_all(void *ctx, const unsigned char *p, size_t n) {
    int fd = *(int *)ctx;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int d9_step_compress(int dir_fd, const char *path, d9_compress_mode mode, char *out_path, size_t out_path_len,
                     uint64_t *out_size, bool (*give_up)(void *), void *ctx, char *err, size_t errlen) {
    const char *suffix = d9_compress_suffix(mode);
    if (!*suffix) {
        snprintf(err, errlen, "no such compression (%d)", (int)mode);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
    char tmp[4096];
    if (snprintf(out_path, out_path_len, "%s%s", path, suffix) >= (int)out_path_len ||
        snprintf(tmp, sizeof tmp, "%.*s.%s%s.tmp", (int)dir_len, path, path + dir_len, suffix) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    d9_codec *codec = mode == D9_COMPRESS_GZIP ? d9_codec_gzip_new(err, errlen) : d9_codec_zstd_new(err, errlen);
    if (!codec) return -1;
    /* Neither file is reached through a link: only the trace file itself, and a temporary
     * made here, by us, now (a leftover of an earlier attempt is removed first, never opened). */
    int in = openat(dir_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat in_st;
    if (in < 0 || fstat(in, &in_st) != 0 || !S_ISREG(in_st.st_mode)) {
        snprintf(err, errlen, "open %s: %s", path, in < 0 ? strerror(errno) : "not a regular file");
        if (in >= 0) close(in);
        codec->free(codec);
        return -1;
    }
    int out = -1;
    for (int attempt = 0; out < 0 && attempt < 2; attempt++) {
        out = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, D9_TRACE_FILE_MODE);
        if (out < 0 && (errno != EEXIST || unlinkat(dir_fd, tmp, 0) != 0)) break;
    }
    bool out_created = out >= 0; /* a temporary of ours to remove on failure (never another's) */
    if (out >= 0) d9_files_owner_apply(out); /* after a privilege drop's hand-over (hand_over_files.h) */
    if (out < 0) {
        snprintf(err, errlen, "create %s: %s", tmp, strerror(errno));
        close(in);
        codec->free(codec);
        return -1;
    }
    unsigned char *ibuf = malloc(PIECE);
    int rc = -1;
    if (!ibuf) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
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
        int fr = codec->feed(codec, ibuf, (size_t)n, eof, write_all, &out, err, errlen);
        if (fr == -2) snprintf(err, errlen, "write %s: %s", tmp, strerror(errno));
        if (fr != 0) goto done;
    }
    /* The compressed file is born now, long after the segment began (an outage, a backlog):
     * it carries the segment's start as its modification time, which d9_segment_start_time
     * reads for a compressed file (a later upload's key, the disk budget's order). */
    struct statx sx;
    if (statx(in, "", AT_EMPTY_PATH, STATX_BTIME | STATX_MTIME, &sx) == 0) {
        struct statx_timestamp t = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime : sx.stx_mtime;
        struct timespec times[2] = {{.tv_nsec = UTIME_NOW}, {.tv_sec = (time_t)t.tv_sec, .tv_nsec = (long)t.tv_nsec}};
        (void)futimens(out, times); /* best effort: the key then says when it was compressed */
    }
    struct stat st;
    if (fstat(out, &st) != 0 || close(out) != 0) {
        out = -1;
        snprintf(err, errlen, "close %s: %s", tmp, strerror(errno));
        goto done;
    }
    out = -1;
    /* The compressed file appears before the .bin goes: a reader may see both for a moment,
     * never neither. */
    if (renameat(dir_fd, tmp, dir_fd, out_path) != 0) {
        snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
        goto done;
    }
    if (unlinkat(dir_fd, path, 0) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "unlink %s: %s", path, strerror(errno));
        unlinkat(dir_fd, out_path, 0); /* keep one copy, the original */
        goto done;
    }
    *out_size = (uint64_t)st.st_size;
    rc = 0;
done:
    codec->free(codec);
    free(ibuf);
    close(in);
    if (out >= 0) close(out);
    if (rc != 0 && out_created) unlinkat(dir_fd, tmp, 0);
    return rc;
}
