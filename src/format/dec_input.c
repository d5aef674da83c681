/* Byte sources for the decoder (see dec_input.h). */
#include "format/dec_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

void d9_input_close(d9_input *in) {
    if (in) in->close(in);
}

/* ---- fd ---- */

typedef struct fd_input {
    d9_input base;
    int fd;
    bool owned;
} fd_input;

static long fd_read(d9_input *in, uint8_t *buf, size_t n) {
    fd_input *f = (fd_input *)in;
    for (;;) {
        ssize_t r = read(f->fd, buf, n);
        if (r >= 0) {
            in->raw_bytes += (uint64_t)r;
            return (long)r;
        }
        if (errno == EINTR) continue;
        snprintf(in->err, sizeof in->err, "read: %s", strerror(errno));
        return -1;
    }
}

static void fd_close(d9_input *in) {
    fd_input *f = (fd_input *)in;
    if (f->owned) close(f->fd);
    free(f);
}

d9_input *d9_input_from_fd(int fd, bool owned) {
    fd_input *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->base.read = fd_read;
    f->base.close = fd_close;
    f->fd = fd;
    f->owned = owned;
    return &f->base;
}

/* ---- FILE* ---- */

typedef struct file_input {
    d9_input base;
    FILE *f;
} file_input;

static long file_read(d9_input *in, uint8_t *buf, size_t n) {
    file_input *fi = (file_input *)in;
    size_t r = fread(buf, 1, n, fi->f);
    if (r == 0 && ferror(fi->f)) {
        snprintf(in->err, sizeof in->err, "read error");
        return -1;
    }
    in->raw_bytes += r;
    return (long)r;
}

static void file_close(d9_input *in) { free(in); }

d9_input *d9_input_from_file(FILE *f) {
    file_input *fi = calloc(1, sizeof *fi);
    if (!fi) return NULL;
    fi->base.read = file_read;
    fi->base.close = file_close;
    fi->f = f;
    return &fi->base;
}

/* ---- memory ---- */

typedef struct mem_input {
    d9_input base;
    const uint8_t *p;
    size_t left;
} mem_input;

static long mem_read(d9_input *in, uint8_t *buf, size_t n) {
    mem_input *m = (mem_input *)in;
    if (n > m->left) n = m->left;
    if (n > (size_t)1 << 30) n = (size_t)1 << 30;
    if (n) memcpy(buf, m->p, n);
    m->p += n;
    m->left -= n;
    in->raw_bytes += n;
    return (long)n;
}

static void mem_close(d9_input *in) { free(in); }

d9_input *d9_input_from_mem(const void *data, size_t len) {
    mem_input *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->base.read = mem_read;
    m->base.close = mem_close;
    m->p = data;
    m->left = len;
    return &m->base;
}

/* ---- gzip ---- */

#define GZ_IN_SIZE 65536

typedef struct gz_input {
    d9_input base;
    d9_input *raw;
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
            inflateReset(&g->zs);
            g->member_done = false;
        }
        int zr = inflate(&g->zs, Z_NO_FLUSH);
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
    inflateEnd(&g->zs);
    d9_input_close(g->raw);
    free(g);
}

d9_input *d9_input_gzip(d9_input *raw, const uint8_t *prefix, size_t prefix_len) {
    size_t in_size = prefix_len > GZ_IN_SIZE ? prefix_len : GZ_IN_SIZE;
    gz_input *g = prefix_len <= UINT32_MAX ? calloc(1, sizeof *g + in_size) : NULL;
    if (!g) {
        d9_input_close(raw);
        return NULL;
    }
    /* 15 + 16: a gzip wrapper (not zlib or raw deflate), largest window. */
    if (inflateInit2(&g->zs, 15 + 16) != Z_OK) {
        free(g);
        d9_input_close(raw);
        return NULL;
    }
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
