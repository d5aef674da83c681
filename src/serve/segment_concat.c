/* Concatenation of segments for /api/trace (see segment_concat.h). Each segment is read
 * through the decoder's inputs (format/dec_input.h): a gzip file (its magic first; several
 * members too) through its gzip input, a zstd file through its zstd input, any other as it
 * is. zlib and libzstd are loaded when the first such file is read (common/libz_loader.h). */
#include "serve/segment_concat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/dec_input.h"
#include "serve/open_beneath.h"

struct d9_concat {
    int root_fd;
    d9_concat_part *parts; /* rel copied */
    size_t n, i;        /* segment being read */
    d9_input *cur;      /* the current segment, decompressed */
    uint64_t left;      /* bytes still to give from the current segment */
    uint64_t total;
};

d9_concat *d9_concat_new(int root_fd, const d9_concat_part *parts, size_t n) {
    d9_concat *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->root_fd = root_fd;
    c->parts = calloc(n + 1, sizeof *c->parts);
    if (!c->parts) {
        d9_concat_free(c);
        return NULL;
    }
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        c->parts[i] = parts[i];
        if (!(c->parts[i].rel = strdup(parts[i].rel))) {
            d9_concat_free(c);
            return NULL;
        }
        c->total += parts[i].bytes;
    }
    c->i = SIZE_MAX; /* nothing open yet */
    return c;
}

uint64_t d9_concat_total(const d9_concat *c) { return c->total; }

/* Open segment i beneath the root: it must still be the regular file that was indexed. */
static int open_segment(d9_concat *c, size_t i) {
    struct stat st;
    int fd = d9_open_regular_beneath(c->root_fd, c->parts[i].rel, &st);
    if (fd < 0) return -1;
    if ((uint64_t)st.st_dev != c->parts[i].dev || (uint64_t)st.st_ino != c->parts[i].ino) {
        close(fd); /* replaced since the index looked at it */
        return -1;
    }
    uint8_t head[4];
    ssize_t h = pread(fd, head, sizeof head, 0);
    d9_input *raw = d9_input_from_fd(fd, true);
    if (!raw) {
        close(fd);
        return -1;
    }
    /* the reason a decompressor is missing went to the index already (it decodes each file) */
    d9_input_codec codec = d9_input_codec_of(head, h > 0 ? (size_t)h : 0);
    c->cur = codec == D9_INPUT_PLAIN ? raw : d9_input_unwrap(codec, raw, NULL, 0, NULL, 0);
    if (!c->cur) return -1;
    c->left = c->parts[i].bytes;
    return 0;
}

ssize_t d9_concat_read(d9_concat *c, char *buf, size_t max) {
    if (max > INT_MAX) max = INT_MAX;
    while (!c->cur || c->left == 0) {
        d9_input_close(c->cur);
        c->cur = NULL;
        size_t next = c->i == SIZE_MAX ? 0 : c->i + 1;
        if (next >= c->n) return 0;
        c->i = next;
        if (c->parts[next].bytes == 0) continue;
        if (open_segment(c, next) != 0) return -1;
    }
    size_t want = max < c->left ? max : (size_t)c->left;
    long got = d9_input_read(c->cur, (uint8_t *)buf, want);
    if (got <= 0) return -1; /* shorter than when it was indexed */
    c->left -= (uint64_t)got;
    return got;
}

void d9_concat_free(d9_concat *c) {
    if (!c) return;
    d9_input_close(c->cur);
    for (size_t i = 0; c->parts && i < c->n; i++) free((char *)c->parts[i].rel);
    free(c->parts);
    free(c);
}
