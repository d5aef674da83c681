/* Pipeline step: replace a sealed trace.N.bin by trace.N.bin.gz (one plain gzip member of the
 * whole file, what dial9 writes and every reader here reads) or trace.N.bin.zst (one zstd
 * frame, DIAL9_COMPRESS=zstd), streamed in 64 KiB pieces. */
#ifndef D9_SINKS_STEP_COMPRESS_H
#define D9_SINKS_STEP_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9/dial9.h"

/* ".gz" for D9_COMPRESS_GZIP, ".zst" for D9_COMPRESS_ZSTD, "" otherwise. */
const char *d9_compress_suffix(d9_compress_mode mode);
/* NULL when `mode` can compress here (its library loads, or nothing to load), else why not
 * (the loader's message), so that it is said once, not once per file. */
const char *d9_compress_unavailable(d9_compress_mode mode);

/* Compress `path` (relative to dir_fd: a run directory's handle, or AT_FDCWD) into `path`.gz
 * or `path`.zst as `mode` says (written as a hidden temporary created exclusively, mode 0600,
 * renamed into place, then `path` unlinked; no link is followed). On success 0 with the new path and size. On
 * failure -1 with a message; `path` is left as it was and no partial file remains. give_up
 * (may be NULL) is polled between pieces: when it says so, the step stops (-1, "given up"). */
int d9_step_compress(int dir_fd, const char *path, d9_compress_mode mode, char *out_path, size_t out_path_len,
                     uint64_t *out_size, bool (*give_up)(void *), void *ctx, char *err, size_t errlen);

#endif
