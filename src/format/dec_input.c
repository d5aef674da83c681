/* Byte sources for the decoder (see dec_input.h). */
#include "format/dec_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

d9_input_codec d9_input_codec_of(const uint8_t *b, size_t n) {
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return D9_INPUT_GZIP;
    if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) return D9_INPUT_ZSTD;
    return D9_INPUT_PLAIN;
}

d9_input *d9_input_from_mem(const void *data, size_t len) {
    mem_input *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->base.read = mem_read;
    m->base.close = mem_close;
    m->p = data;
    m->left = len;
    return &m->base;
}
