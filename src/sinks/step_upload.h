/* Pipeline step: store one sealed segment file in S3 through s3_client.c. Below the multipart
 * threshold one PUT (the body's SHA-256 sent as x-amz-content-sha256 and
 * x-amz-checksum-sha256 so that the server verifies what it stored); from it on, a multipart
 * upload (parts of the part size, each with its own checksums), aborted on any failure so that
 * no parts stay behind. The file is streamed in 64 KiB pieces either way: memory does not grow
 * with its size. The caller retries, deletes the local file once it is stored, and stops
 * uploading after a fatal answer.
 *
 * DIAL9_S3_MULTIPART_THRESHOLD_MB (default 16) and DIAL9_S3_PART_SIZE_MB (default 8, at least
 * S3's minimum of 5) set the sizes. */
#ifndef D9_SINKS_STEP_UPLOAD_H
#define D9_SINKS_STEP_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dial9/dial9.h"

/* Bounds of both size variables, in MiB (the configuration checks them too, config.c) */
#define D9_S3_PART_MIN_MB 5
#define D9_S3_PART_MAX_MB (5 * 1024)

typedef struct d9_uploader d9_uploader;

#include "aws/s3_client.h"

/* OK: stored; RETRY: try again later; REJECTED: this file cannot be stored (unreadable, a 4xx
 * about it): keep it; FATAL: no upload can work (no credentials, AccessDenied...). */
typedef d9_s3_result d9_upload_result;
#define D9_UPLOAD_OK D9_S3_OK
#define D9_UPLOAD_RETRY D9_S3_RETRY
#define D9_UPLOAD_REJECTED D9_S3_REJECTED
#define D9_UPLOAD_FATAL D9_S3_FATAL

/* NULL with a message when libcurl.so.4 cannot be loaded, the endpoint is malformed or a size
 * variable is bad. cfg->s3_bucket must be set; cfg->service is the service name in keys. */
d9_uploader *d9_uploader_new(const d9_config *cfg, char *err, size_t errlen);
void d9_uploader_free(d9_uploader *u);

/* One attempt. `index` is the segment's N, `start` its start time (UTC seconds); service and
 * boot_id are those of the run that recorded it (NULL: this process's). The key is written to
 * key (for messages) and err explains any result but OK. give_up (may be NULL) is polled
 * during the transfer: when it says so, the attempt is aborted (RETRY). */
d9_upload_result d9_uploader_put(d9_uploader *u, const char *path, uint64_t index, time_t start,
                                 const char *service, const char *boot_id,
                                 bool (*give_up)(void *), void *ctx, char *key, size_t keylen,
                                 char *err, size_t errlen);

/* "s3://bucket/" for messages. */
const char *d9_uploader_target(const d9_uploader *u);
/* The sizes in use (bytes). */
uint64_t d9_uploader_multipart_threshold(const d9_uploader *u);
uint64_t d9_uploader_part_size(const d9_uploader *u);

#endif
