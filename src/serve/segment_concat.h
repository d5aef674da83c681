/* The body of /api/trace: the selected segments of a run, one after the other, each
 * decompressed when gzip'ed or zstd'ed and cut at the end of its last complete frame (a torn tail would otherwise
 * swallow the header of the next stream). The format allows plain concatenation of streams,
 * so the result is one valid trace of exactly the announced length. */
#ifndef D9_SERVE_SEGMENT_CONCAT_H
#define D9_SERVE_SEGMENT_CONCAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct d9_concat d9_concat;

/* One segment: its path relative to the root, the identity it had when it was indexed (the
 * file opened must still be that one) and how many decoded bytes it contributes. */
typedef struct d9_concat_part {
    const char *rel;
    uint64_t dev, ino;
    uint64_t bytes;
} d9_concat_part;

/* The segments, each opened only when its turn comes, beneath root_fd (open_beneath.h), which
 * must stay open while the concatenation exists. The names are copied. NULL when out of
 * memory. */
d9_concat *d9_concat_new(int root_fd, const d9_concat_part *parts, size_t n);
uint64_t d9_concat_total(const d9_concat *c);
/* Up to max bytes at the current position into buf: the count, 0 at the end, -1 when a file
 * cannot be opened, is no longer the file indexed, or ends early. */
ssize_t d9_concat_read(d9_concat *c, char *buf, size_t max);
void d9_concat_free(d9_concat *c);

#endif
