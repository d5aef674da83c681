/* Concatenation of segments for /api/trace (see segment_concat.h). zlib's gzread reads gzip
 * files (several members too) and, transparently, plain ones. */
#include "serve/segment_concat.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "serve/safe_path.h"

struct d9_concat {
    char *root;
    char **paths;
    uint64_t *bytes;
    size_t n, i;        /* segment being read */
    gzFile cur;
    uint64_t left;      /* bytes still to give from the current segment */
    uint64_t total;
};

d9_concat *d9_concat_new(const char *root, char *const *paths, const uint64_t *bytes, size_t n) {
    d9_concat *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->root = strdup(root);
    c->paths = calloc(n + 1, sizeof *c->paths);
    c->bytes = calloc(n + 1, sizeof *c->bytes);
    if (!c->root || !c->paths || !c->bytes) {
        d9_concat_free(c);
        return NULL;
    }
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        if (!(c->paths[i] = strdup(paths[i]))) {
            d9_concat_free(c);
            return NULL;
        }
        c->bytes[i] = bytes[i];
        c->total += bytes[i];
    }
    c->i = SIZE_MAX; /* nothing open yet */
    return c;
}

uint64_t d9_concat_total(const d9_concat *c) { return c->total; }

/* Open segment i, checking again that it still resolves inside the root. */
static int open_segment(d9_concat *c, size_t i) {
    char *real = realpath(c->paths[i], NULL);
    if (!real) return -1;
    int inside = d9_path_inside(c->root, real);
    int fd = inside ? open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    free(real);
    if (fd < 0) return -1;
    c->cur = gzdopen(fd, "rb");
    if (!c->cur) {
        close(fd);
        return -1;
    }
    gzbuffer(c->cur, 128 * 1024);
    c->left = c->bytes[i];
    return 0;
}

ssize_t d9_concat_read(d9_concat *c, char *buf, size_t max) {
    if (max > INT_MAX) max = INT_MAX;
    while (!c->cur || c->left == 0) {
        if (c->cur) {
            gzclose(c->cur);
            c->cur = NULL;
        }
        size_t next = c->i == SIZE_MAX ? 0 : c->i + 1;
        if (next >= c->n) return 0;
        c->i = next;
        if (c->bytes[next] == 0) continue;
        if (open_segment(c, next) != 0) return -1;
    }
    size_t want = max < c->left ? max : (size_t)c->left;
    int got = gzread(c->cur, buf, (unsigned)want);
    if (got <= 0) return -1; /* shorter than when it was indexed */
    c->left -= (uint64_t)got;
    return got;
}

void d9_concat_free(d9_concat *c) {
    if (!c) return;
    if (c->cur) gzclose(c->cur);
    for (size_t i = 0; c->paths && i < c->n; i++) free(c->paths[i]);
    free(c->paths);
    free(c->bytes);
    free(c->root);
    free(c);
}
