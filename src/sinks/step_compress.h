/* Pipeline step: replace a sealed trace.N.bin by trace.N.bin.gz, one plain gzip member of the
 * whole file (what dial9 writes and every reader here reads), streamed in 64 KiB pieces. */
#ifndef D9_SINKS_STEP_COMPRESS_H
#define D9_SINKS_STEP_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Compress `path` into `path`.gz (written as a hidden temporary, renamed into place, then
 * `path` unlinked). On success 0 with the new path and size. On failure -1 with a message;
 * `path` is left as it was and no partial .gz remains. give_up (may be NULL) is polled between
 * pieces: when it says so, the step stops (-1, "given up"). */
int d9_step_compress_gzip(const char *path, char *gz_path, size_t gz_path_len, uint64_t *gz_size,
                          bool (*give_up)(void *), void *ctx, char *err, size_t errlen);

#endif
