/* AWS Signature Version 4 for one request (the "Authorization: AWS4-HMAC-SHA256 ..." header),
 * computed here rather than by libcurl: Debian 12's libcurl 7.88 neither sends the payload hash
 * S3 requires nor canonicalizes paths and queries. */
#ifndef D9_AWS_SIGV4_H
#define D9_AWS_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

typedef struct d9_sigv4_header {
    const char *name;  /* lowercase */
    const char *value; /* trimmed, as sent */
} d9_sigv4_header;

typedef struct d9_sigv4_request {
    const char *method;
    const char *canonical_uri;   /* already URI-encoded (d9_uri_encode, slashes kept) */
    const char *canonical_query; /* already canonical ("" for none) */
    const d9_sigv4_header *headers; /* every signed header, any order; must include host */
    size_t nheaders;
    const char *payload_hash;   /* lowercase hex SHA-256 of the body */
    const char *amz_date;       /* YYYYMMDDTHHMMSSZ, the x-amz-date header */
    const char *region, *service;
    const char *access_key, *secret_key;
} d9_sigv4_request;

/* Write the Authorization header's value into out. 0, or -1 when it does not fit. When
 * canonical_out is not NULL it gets the canonical request (for error messages and tests). */
int d9_sigv4_authorization(const d9_sigv4_request *r, char *out, size_t outlen, char *canonical_out,
                           size_t canonical_len);

/* RFC 3986 percent-encoding of everything but unreserved characters (and '/' when keep_slash),
 * as SigV4 wants it. 0, or -1 when it does not fit. */
int d9_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen);

#endif
