/* Which S3 object a file of the local cache is a copy of: its sidecar `.NAME.key`, beside NAME,
 * holds the object's key, written (under a temporary name, renamed in) after NAME's own rename.
 * A cached file counts only when its sidecar names the key asked for: one local path may hold
 * another object of the same size after another selection (two recordings of one instance and
 * boot, both from segment 0, fleet/s3_fetch.c), and a crash between the two renames leaves a
 * file whose sidecar names the old key or nothing. The fleet cache writes and checks it
 * (fleet/s3_cache.c); dial9-serve checks it beneath its root (serve/trace_index.c). */
#ifndef D9_COMMON_CACHE_SIDECAR_H
#define D9_COMMON_CACHE_SIDECAR_H

#include <stdbool.h>
#include <stddef.h>

/* `.NAME.key` beside path (path may be relative). false when it does not fit in len. */
bool d9_cache_sidecar_path(const char *path, char *out, size_t len);

/* Is path's base name a sidecar's (`.NAME.key`)? */
bool d9_cache_is_sidecar(const char *path);

/* Does the sidecar open as fd hold exactly key? fd is closed (-1: false). */
bool d9_cache_sidecar_names(int fd, const char *key);

/* Write path's sidecar naming key. 0, or -1 with a message naming the sidecar. */
int d9_cache_sidecar_write(const char *path, const char *key, char *err, size_t errlen);

#endif
