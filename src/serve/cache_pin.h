/* The segments an answer of `dial9 serve --bucket` is streaming stay in the S3 cache: each is
 * held open with a shared flock(2), which the cache's evictor respects (it unlinks only what it
 * can lock exclusively without waiting: fleet/s3_cache.h), and its access time is set to now, the
 * cache's "recently used". */
#ifndef D9_SERVE_CACHE_PIN_H
#define D9_SERVE_CACHE_PIN_H

#include <stddef.h>

typedef struct d9_pins d9_pins;

/* Pin the n files rel[] beneath dir_fd. NULL when one is gone, being evicted (locked, or
 * unlinked once opened), not a regular file, or out of memory: nothing stays pinned then. */
d9_pins *d9_pin_files(int dir_fd, const char *const *rel, size_t n);
void d9_unpin_files(d9_pins *p);

#endif
