/* gzip at level 1: dial9's speed setting ("fast"); trace data compresses well even so, and
 * the background thread must keep up with the writer on a busy host. One plain gzip member of
 * the whole file, what dial9 writes and every reader here reads. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "sinks/compress_codec.h"
#include "common/libz_loader.h"

#define OUT_PIECE (64 * 1024)

typedef struct gzip_codec {
    d9_codec base;
    const d9_libz *z;
    z_stream zs;
    unsigned char out[OUT_PIECE];
} gzip_codec;

static int gzip_feed(d9_codec *c, const unsigned char *in, size_t n, bool eof, d9_codec_sink sink, void *sink_ctx,
                     char *err, size_t errlen) {
    gzip_codec *g = (gzip_codec *)c;
    g->zs.next_in = (unsigned char *)in;
    g->zs.avail_in = (uInt)n; /* pieces of 64 KiB: never near UINT_MAX */
    do {
        g->zs.next_out = g->out;
        g->zs.avail_out = OUT_PIECE;
        if (g->z->deflate(&g->zs, eof ? Z_FINISH : Z_NO_FLUSH) == Z_STREAM_ERROR) {
            snprintf(err, errlen, "deflate failed");
            return -1;
        }
        size_t got = OUT_PIECE - g->zs.avail_out;
        if (got && sink(sink_ctx, g->out, got) != 0) return -2;
    } while (g->zs.avail_out == 0);
    return 0;
}

static void gzip_free(d9_codec *c) {
    gzip_codec *g = (gzip_codec *)c;
    g->z->deflateEnd(&g->zs);
    free(g);
}

d9_codec *d9_codec_gzip_new(char *err, size_t errlen) {
    const d9_libz *z = d9_libz_get();
    if (!z) {
        snprintf(err, errlen, "%s", d9_libz_error());
        return NULL;
    }
    gzip_codec *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->z = z;
    /* windowBits 15 + 16: a gzip wrapper; memLevel 8: about 256 KiB of state */
    if (z->deflateInit2_(&g->zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof g->zs) != Z_OK) {
        snprintf(err, errlen, "deflateInit2 failed");
        free(g);
        return NULL;
    }
    g->base.feed = gzip_feed;
    g->base.free = gzip_free;
    return &g->base;
}
