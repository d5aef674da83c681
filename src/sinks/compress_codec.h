/* A streaming compressor for the compress step (step_compress.c): gzip (codec_gzip.c, libz.so.1)
 * or zstd (codec_zstd.c, libzstd.so.1), each from its library loaded with dlopen. Memory is
 * fixed per codec, whatever the size of the file. */
#ifndef D9_SINKS_COMPRESS_CODEC_H
#define D9_SINKS_COMPRESS_CODEC_H

#include <stdbool.h>
#include <stddef.h>

/* Takes n compressed bytes: 0, or -1 with errno set. */
typedef int (*d9_codec_sink)(void *ctx, const unsigned char *p, size_t n);

typedef struct d9_codec d9_codec;
struct d9_codec {
    /* Compress n bytes of input (eof: the last of it, n may be 0) and hand what comes out to
     * sink. 0; -1 when compressing failed (message in err); -2 when sink failed (its errno). */
    int (*feed)(d9_codec *c, const unsigned char *in, size_t n, bool eof, d9_codec_sink sink, void *sink_ctx,
                char *err, size_t errlen);
    void (*free)(d9_codec *c);
};

/* NULL with a message when the library cannot be loaded or there is no memory. */
d9_codec *d9_codec_gzip_new(char *err, size_t errlen);
d9_codec *d9_codec_zstd_new(char *err, size_t errlen);

#endif
