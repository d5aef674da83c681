/* The gzip inflater input of the decoder (see dec_input.h): the one part of the decoder that
 * needs zlib, so it is built into dial9_reader only and libdial9 stays libc-only. zlib itself
 * is loaded with dlopen at the first gzip input (common/libz_loader.h): no reader links it. */
#include "format/dec_input.h"

#include <stdlib.h>
#include <string.h>

#include "common/libz_loader.h"

#define GZ_IN_SIZE 65536

typedef struct gz_input {
    d9_input base;
    d9_input *raw;
    const d9_libz *z;
    z_stream zs;
    bool raw_eof;
    bool member_done; /* the last inflate() call ended a gzip member */
    bool failed;
    size_t in_size;
    uint8_t in[]; /* compressed bytes: GZ_IN_SIZE, or more to hold a larger prefix */
} gz_input;

static long gz_read(d9_input *in, uint8_t *buf, size_t n) {
    gz_input *g = (gz_input *)in;
    if (g->failed) return -1;
    if (n > UINT32_MAX) n = UINT32_MAX;
    g->zs.next_out = buf;
    g->zs.avail_out = (uInt)n;
    for (;;) {
        if (g->zs.avail_in == 0 && !g->raw_eof) {
            long r = d9_input_read(g->raw, g->in, g->in_size);
            if (r < 0) {
                snprintf(in->err, sizeof in->err, "%s", g->raw->err);
                g->failed = true;
                return -1;
            }
            if (r == 0) g->raw_eof = true;
            g->zs.next_in = g->in;
            g->zs.avail_in = (uInt)r;
            in->raw_bytes = g->raw->raw_bytes;
        }
        if (g->zs.avail_in == 0 && g->raw_eof) {
            /* The input is over: fine after a whole member, short otherwise. */
            if (!g->member_done) in->incomplete = true;
            return (long)(n - g->zs.avail_out);
        }
        if (g->member_done) {
            /* More bytes after a member: the next member of a concatenated gzip file. */
            g->z->inflateReset(&g->zs);
            g->member_done = false;
        }
        int zr = g->z->inflate(&g->zs, Z_NO_FLUSH);
        size_t got = n - g->zs.avail_out;
        if (zr == Z_STREAM_END) {
            g->member_done = true;
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            const char *why = g->zs.msg ? g->zs.msg : "corrupt data";
            /* zlib checks a member's CRC and length only after inflating all of it. */
            bool trailer = strstr(why, "incorrect data check") || strstr(why, "incorrect length check");
            snprintf(in->err, sizeof in->err, "gzip: %s%s", why,
                     trailer ? " (a damaged gzip trailer; the data before it was read)" : "");
            g->failed = true;
            /* What this call inflated is good data: hand it over, the error comes next call. */
            return got > 0 ? (long)got : -1;
        }
        if (got > 0 && (g->zs.avail_out == 0 || g->member_done)) return (long)got;
        if (got == n) return (long)got;
    }
}

static void gz_close(d9_input *in) {
    gz_input *g = (gz_input *)in;
    g->z->inflateEnd(&g->zs);
    d9_input_close(g->raw);
    free(g);
}

d9_input *d9_input_gzip(d9_input *raw, const uint8_t *prefix, size_t prefix_len, char *err, size_t errlen) {
    const d9_libz *z = d9_libz_get();
    if (!z) {
        if (err && errlen) snprintf(err, errlen, "gzip-compressed data: %s", d9_libz_error());
        d9_input_close(raw);
        return NULL;
    }
    size_t in_size = prefix_len > GZ_IN_SIZE ? prefix_len : GZ_IN_SIZE;
    gz_input *g = prefix_len <= UINT32_MAX ? calloc(1, sizeof *g + in_size) : NULL;
    /* 15 + 16: a gzip wrapper (not zlib or raw deflate), largest window. */
    int zr = g ? z->inflateInit2_(&g->zs, 15 + 16, ZLIB_VERSION, (int)sizeof g->zs) : Z_MEM_ERROR;
    if (zr != Z_OK) {
        if (err && errlen) {
            if (zr == Z_MEM_ERROR) snprintf(err, errlen, "out of memory");
            else snprintf(err, errlen, "gzip: libz.so.1 cannot start inflating (zlib error %d)", zr);
        }
        free(g);
        d9_input_close(raw);
        return NULL;
    }
    g->z = z;
    g->base.read = gz_read;
    g->base.close = gz_close;
    g->raw = raw;
    g->in_size = in_size;
    if (prefix_len) memcpy(g->in, prefix, prefix_len);
    g->zs.next_in = g->in;
    g->zs.avail_in = (uInt)prefix_len;
    g->base.raw_bytes = raw->raw_bytes;
    return &g->base;
}
