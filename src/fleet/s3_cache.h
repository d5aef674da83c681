/* The local cache of S3 objects that `s3://` inputs and `dial9 serve --bucket` read from:
 * DIAL9_S3_CACHE_DIR, else $XDG_CACHE_HOME/dial9/s3, else ~/.cache/dial9/s3 (directories 0700),
 * at most DIAL9_S3_CACHE_MAX_MB (default 2048).
 *
 * Least recently used goes first: a file's use is its access time, set to the current time
 * (nanoseconds, not the kernel's coarse clock, so uses in a row stay in order) when it is
 * fetched or used again. A file a reader holds a shared flock(2) on is in use and never
 * evicted: dial9-serve locks the segments it is serving (serve/cache_pin.h), a fetch its
 * partial download. The evictor takes an exclusive lock without waiting before it unlinks, so a
 * reader that locks after the unlink sees a file with no link left and treats it as gone.
 *
 * A cached file is the object whose key its sidecar `.NAME.key` (beside it) names: a local
 * path is chosen per selection (s3_fetch.c: one run directory per recording), so one path
 * may hold another object of the same size after another selection (two recordings of one
 * instance and boot, both from segment 0); the size alone would take it for this one. The
 * sidecar's rule is common/cache_sidecar.h's, which dial9-serve checks too. */
#ifndef D9_FLEET_S3_CACHE_H
#define D9_FLEET_S3_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aws/s3_client.h"

/* The cache directory, created. 0, or -1 with a message. */
int d9_s3_cache_root(char *out, size_t len, char *err, size_t errlen);

/* DIAL9_S3_CACHE_MAX_MB in bytes. 0, or -1 with a message naming a bad value. */
int d9_s3_cache_bound(uint64_t *bytes, char *err, size_t errlen);

/* mkdir -p, 0700 (path is modified and restored). 0, or -1 with errno. */
int d9_s3_cache_mkdirs(char *path);

/* Room for `incoming` bytes under root: the least recently used files that are neither in keep
 * (sorted with strcmp) nor locked by a reader are removed until the cache and incoming fit in
 * bound. Returns what the cache then holds plus incoming (above bound when kept and locked
 * files leave no room). */
uint64_t d9_s3_cache_evict(const char *root, uint64_t bound, uint64_t incoming, char **keep, size_t nkeep);

/* Used now: its access time set to the current time. */
void d9_s3_cache_touch(const char *path);

/* Is path the object key, of this size (its sidecar names key)? */
bool d9_s3_cache_holds(const char *path, const char *key, uint64_t size);

/* GET key into path (through path.part, renamed when complete; retried), its size checked
 * against the listing's, and its sidecar written (after the rename: a crash between the two
 * leaves a file that d9_s3_cache_holds refuses). 0, or -1 with a message. */
int d9_s3_cache_fetch(d9_s3_client *c, const char *key, uint64_t size, const char *path, char *err, size_t errlen);

#endif
