/* zstd (DIAL9_COMPRESS=zstd): one zstd frame of the whole file with a content checksum (a
 * reader tells a damaged file from a good one), at level 2, chosen for speed: on a 64 MiB
 * segment level 1 compressed less than gzip -1 (4.0x vs 4.4x), level 2 5.2x for 13 % more CPU
 * than level 1 and still two thirds of gzip -1's (bench/README.md); 3 and up cost more for no
 * better ratio. Its state: a 1 MiB window and tables, ~2.5 MiB, whatever the file size. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "sinks/compress_codec.h"
#include "common/libzstd_loader.h"

#define D9_ZSTD_LEVEL 2
#define OUT_PIECE (64 * 1024)

typedef struct zstd_codec {
    d9_codec base;
    const d9_libzstd *z;
    ZSTD_CCtx *cctx;
    unsigned char out[OUT_PIECE];
} zstd_codec;

static int zstd_feed(d9_codec *c, const unsigned char *in, size_t n, bool eof, d9_codec_sink sink, void *sink_ctx,
                     char *err, size_t errlen) {
    zstd_codec *zc = (zstd_codec *)c;
    ZSTD_inBuffer ib = {in, n, 0};
    for (;;) {
        ZSTD_outBuffer ob = {zc->out, OUT_PIECE, 0};
        size_t left = zc->z->compressStream2(zc->cctx, &ob, &ib, eof ? ZSTD_e_end : ZSTD_e_continue);
        if (zc->z->isError(left)) {
            snprintf(err, errlen, "zstd: %s", zc->z->getErrorName(left));
            return -1;
        }
        if (ob.pos && sink(sink_ctx, zc->out, ob.pos) != 0) return -2;
        /* the end: until the frame is flushed whole (0 left); else until the input is taken */
        if (eof ? left == 0 : ib.pos == ib.size) return 0;
    }
}

static void zstd_free(d9_codec *c) {
    zstd_codec *zc = (zstd_codec *)c;
    zc->z->freeCCtx(zc->cctx);
    free(zc);
}

d9_codec *d9_codec_zstd_new(char *err, size_t errlen) {
    const d9_libzstd *z = d9_libzstd_get();
    if (!z) {
        snprintf(err, errlen, "%s", d9_libzstd_error());
        return NULL;
    }
    zstd_codec *zc = calloc(1, sizeof *zc);
    if (!zc || !(zc->cctx = z->createCCtx())) {
        snprintf(err, errlen, "out of memory");
        free(zc);
        return NULL;
    }
    zc->z = z;
    size_t r = z->setParameter(zc->cctx, ZSTD_c_compressionLevel, D9_ZSTD_LEVEL);
    if (!z->isError(r)) r = z->setParameter(zc->cctx, ZSTD_c_checksumFlag, 1);
    if (z->isError(r)) {
        snprintf(err, errlen, "zstd: %s", z->getErrorName(r));
        z->freeCCtx(zc->cctx);
        free(zc);
        return NULL;
    }
    zc->base.feed = zstd_feed;
    zc->base.free = zstd_free;
    return &zc->base;
}
