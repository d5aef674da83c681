/* The zstd input of the decoder (see dec_input.h): like dec_gzip.c, the part that needs
 * libzstd, so it is built into dial9_reader only and libdial9 stays libc-only. libzstd itself
 * is loaded with dlopen at the first zstd input (common/libzstd_loader.h): no reader links it. */
#include "format/dec_input.h"

#include <stdlib.h>
#include <string.h>

#include "common/libzstd_loader.h"

#define ZST_IN_SIZE 65536
/* 8 MiB: what zstd levels 1 to 19 use at most (our recorder writes 2^19..2^21); a frame that
 * asks for more is refused instead of allocated (hostile input) */
#define WINDOW_LOG_MAX 23

typedef struct zst_input {
    d9_input base;
    d9_input *raw;
    const d9_libzstd *zl;
    ZSTD_DStream *ds;
    ZSTD_inBuffer in;
    size_t hint;     /* input for the next call: zstd's own hint, one block (+ the next header) */
    bool pending;    /* the last call filled the output: flush (no input) before feeding more */
    bool raw_eof;
    bool frame_done; /* the last call ended a frame (and flushed it whole) */
    bool failed;
    size_t in_size;
    uint8_t buf[]; /* compressed bytes: ZST_IN_SIZE, or more to hold a larger prefix */
} zst_input;

/* zstd drops what a call decompressed when that call fails (its positions are not updated), so
 * each call gets one unit of input at most (the size zstd asks for next) and nothing left to
 * flush: a bad checksum then fails a call that decompressed nothing, and every event before it
 * is read, as with gzip. */
static long zst_read(d9_input *in, uint8_t *out, size_t n) {
    zst_input *z = (zst_input *)in;
    if (z->failed) return -1;
    ZSTD_outBuffer ob = {out, n, 0};
    for (;;) {
        ZSTD_inBuffer piece = {NULL, 0, 0};
        if (!z->pending) {
            if (z->in.pos == z->in.size && !z->raw_eof) {
                long r = d9_input_read(z->raw, z->buf, z->in_size);
                if (r < 0) {
                    snprintf(in->err, sizeof in->err, "%s", z->raw->err);
                    z->failed = true;
                    return ob.pos > 0 ? (long)ob.pos : -1;
                }
                if (r == 0) z->raw_eof = true;
                z->in = (ZSTD_inBuffer){z->buf, (size_t)r, 0};
                in->raw_bytes = z->raw->raw_bytes;
            }
            if (z->in.pos == z->in.size && z->raw_eof) {
                /* The input is over: fine after a whole frame, short otherwise. */
                if (!z->frame_done) in->incomplete = true;
                return (long)ob.pos;
            }
            size_t avail = z->in.size - z->in.pos;
            piece = (ZSTD_inBuffer){(const uint8_t *)z->in.src + z->in.pos, avail < z->hint ? avail : z->hint, 0};
        }
        size_t r = z->zl->decompressStream(z->ds, &ob, &piece);
        if (z->zl->isError(r)) {
            ZSTD_ErrorCode code = z->zl->getErrorCode(r);
            snprintf(in->err, sizeof in->err, "zstd: %s%s", z->zl->getErrorName(r),
                     code == ZSTD_error_checksum_wrong ? " (a damaged zstd frame; the data before it was read)"
                     : code == ZSTD_error_frameParameter_windowTooLarge ? " (its window is over the 8 MiB a reader allows)"
                                                                         : "");
            z->failed = true;
            /* What earlier calls decompressed is good data: hand it over, the error comes next call. */
            return ob.pos > 0 ? (long)ob.pos : -1;
        }
        z->in.pos += piece.pos;
        z->pending = ob.pos == ob.size;
        z->frame_done = r == 0;
        z->hint = r ? r : 1; /* a new frame: its header a byte at a time until zstd says more */
        if (ob.pos == n || (ob.pos > 0 && z->frame_done)) return (long)ob.pos;
    }
}

static void zst_close(d9_input *in) {
    zst_input *z = (zst_input *)in;
    z->zl->freeDStream(z->ds);
    d9_input_close(z->raw);
    free(z);
}

d9_input *d9_input_zstd(d9_input *raw, const uint8_t *prefix, size_t prefix_len, char *err, size_t errlen) {
    const d9_libzstd *zl = d9_libzstd_get();
    if (!zl) {
        if (err && errlen) snprintf(err, errlen, "zstd-compressed data: %s", d9_libzstd_error());
        d9_input_close(raw);
        return NULL;
    }
    size_t in_size = prefix_len > ZST_IN_SIZE ? prefix_len : ZST_IN_SIZE;
    zst_input *z = calloc(1, sizeof *z + in_size);
    if (!z || !(z->ds = zl->createDStream()) ||
        zl->isError(zl->DCtx_setParameter(z->ds, ZSTD_d_windowLogMax, WINDOW_LOG_MAX))) {
        if (err && errlen) snprintf(err, errlen, "out of memory"); /* the parameter is in range */
        if (z) zl->freeDStream(z->ds);
        free(z);
        d9_input_close(raw);
        return NULL;
    }
    z->zl = zl;
    z->base.read = zst_read;
    z->base.close = zst_close;
    z->raw = raw;
    z->in_size = in_size;
    if (prefix_len) memcpy(z->buf, prefix, prefix_len);
    z->in = (ZSTD_inBuffer){z->buf, prefix_len, 0};
    z->hint = 1;
    z->base.raw_bytes = raw->raw_bytes;
    return &z->base;
}
