/* One S3 bucket over HTTP(S), through libcurl (dlopen'ed), every request signed by sigv4.c:
 * the endpoint and addressing style, then one signed request at a time with a body from a file
 * range or memory and the answer kept in memory (bounded) or written to a file. Used by the
 * uploader (PutObject, multipart), `dial9 upload` and the fleet readers (ListObjectsV2,
 * GetObject). Not thread-safe: one client per thread. */
#ifndef D9_AWS_S3_CLIENT_H
#define D9_AWS_S3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9/dial9.h"
#include "aws/sigv4.h"

typedef struct d9_s3_client d9_s3_client;

typedef enum d9_s3_result {
    D9_S3_OK = 0,   /* 2xx */
    D9_S3_RETRY,    /* network error, 5xx, throttling, expired token...: try again later */
    D9_S3_REJECTED, /* this request cannot work (a 4xx about it, an unreadable file) */
    D9_S3_FATAL,    /* no request can work (no credentials, AccessDenied, NoSuchBucket,
                       InvalidAccessKeyId, SignatureDoesNotMatch) */
} d9_s3_result;

/* The request's body: nothing (mem NULL, fd -1), memory, or a range of a file. */
typedef struct d9_s3_body {
    int fd;                 /* -1: mem (or none) */
    uint64_t offset, length;
    const void *mem;
    const char *sha256_hex; /* the body's hash when already known, else computed here */
} d9_s3_body;
#define D9_S3_NO_BODY ((d9_s3_body){.fd = -1})

typedef struct d9_s3_answer {
    long status;
    char code[128], message[512]; /* of an error answer */
    char etag[256];               /* the ETag header, quotes kept */
    char *body;                   /* a 2xx answer's body, NUL-terminated (free it), when out_fd < 0 */
    size_t body_len;
    int out_fd;                   /* >= 0: a 2xx answer's body is written there instead */
    uint64_t written;
} d9_s3_answer;
#define D9_S3_ANSWER_INIT ((d9_s3_answer){.out_fd = -1})

/* Whether `url` is an endpoint the client takes: http:// or https://, a host (no user info),
 * nothing after it but "/", at most 512 bytes. false with what is wrong in why. The one rule,
 * for the configuration (which says the variable) and the client. */
bool d9_s3_endpoint_check(const char *url, char *why, size_t whylen);

/* NULL with a message when libcurl.so.4 cannot be loaded or the endpoint is malformed. Uses
 * cfg->s3_bucket, s3_region, s3_endpoint, s3_path_style. The stall timeout (a transfer under
 * 1 KiB/s for that long is abandoned) is DIAL9_S3_STALL_SECS, default 30. */
d9_s3_client *d9_s3_client_new(const d9_config *cfg, char *err, size_t errlen);
void d9_s3_client_free(d9_s3_client *c);

/* One attempt. key: the object key, unencoded ("" for the bucket itself); query: already in
 * canonical form ("" for none); extra headers are signed and sent (lowercase names). err
 * explains every result but OK ("METHOD s3://bucket/key: HTTP 403 AccessDenied: ..."). give_up
 * (may be NULL) is polled during the transfer and aborts it (RETRY). */
d9_s3_result d9_s3_request(d9_s3_client *c, const char *method, const char *key, const char *query,
                           const d9_sigv4_header *extra, size_t nextra, const d9_s3_body *body,
                           d9_s3_answer *ans, bool (*give_up)(void *), void *ctx, char *err, size_t errlen);
void d9_s3_answer_free(d9_s3_answer *a);

/* "s3://bucket/" for messages. */
const char *d9_s3_client_target(const d9_s3_client *c);
const char *d9_s3_client_bucket(const d9_s3_client *c);

/* The text of <tag>...</tag> after *from in an XML answer (entities &amp; &lt; &gt; &quot;
 * &apos; decoded); *from moves past it. false when there is none. */
bool d9_s3_xml_next(const char **from, const char *tag, char *out, size_t len);

#endif
