/* Pipeline step: PUT one sealed segment file to S3 (one request, SigV4-signed here, with the
 * body's SHA-256 sent as x-amz-content-sha256 and x-amz-checksum-sha256 so that the server
 * verifies what it stored). The caller retries, deletes the local file once it is stored, and
 * stops uploading after a fatal answer. */
#ifndef D9_SINKS_STEP_UPLOAD_H
#define D9_SINKS_STEP_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dial9/dial9.h"

typedef struct d9_uploader d9_uploader;

typedef enum d9_upload_result {
    D9_UPLOAD_OK = 0,   /* 2xx: stored */
    D9_UPLOAD_RETRY,    /* network error, 5xx, throttling, expired token...: try again later */
    D9_UPLOAD_REJECTED, /* this file cannot be stored (unreadable, a 4xx about it): keep it */
    D9_UPLOAD_FATAL,    /* no upload can work (no credentials, AccessDenied, NoSuchBucket,
                           InvalidAccessKeyId, SignatureDoesNotMatch) */
} d9_upload_result;

/* NULL with a message when libcurl.so.4 cannot be loaded or the endpoint is malformed.
 * cfg->s3_bucket must be set; cfg->service is the service name in keys. */
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

#endif
