/* One small HTTP request to a credential service (STS, the container endpoint, EC2 IMDS)
 * through the dlopen'ed libcurl: its own short timeouts, no redirects, http/https only, the
 * answer kept in memory (at most 64 KiB). */
#ifndef D9_AWS_CREDS_HTTP_H
#define D9_AWS_CREDS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "aws/s3_credentials.h" /* d9_s3_credentials, D9_CREDS_OK / RETRY / FATAL */

typedef struct d9_creds_http {
    const char *method;             /* GET, PUT or POST */
    const char *url;
    const char *headers[4];         /* "Name: value", NULL-terminated when fewer */
    const char *body;               /* PUT/POST body (NULL: empty) */
    long connect_timeout_ms, timeout_ms;
} d9_creds_http;

typedef struct d9_creds_answer {
    long status;
    char body[65536];               /* NUL-terminated */
    size_t len;
    bool unreachable;               /* no connection made (refused, timed out, no route) */
} d9_creds_answer;

/* 0 when an answer came (any status), -1 with err ("Couldn't connect to server", ...). */
int d9_creds_http_request(const d9_creds_http *r, d9_creds_answer *a, char *err, size_t errlen);

/* The request every credential source ends with, and what it makes of the answer. */
typedef int (*d9_creds_parse_fn)(const char *body, size_t len, d9_s3_credentials *c, char *err, size_t errlen);
/* A status other than 200: "what: ..." in err, and D9_CREDS_RETRY or D9_CREDS_FATAL. */
typedef int (*d9_creds_refused_fn)(const d9_creds_answer *a, const char *what, void *ctx, char *err,
                                   size_t errlen);

/* Send r and, on HTTP 200, parse the answer into c (c->source = what): D9_CREDS_OK. When
 * memory is short, no answer came or its body does not parse: D9_CREDS_RETRY with
 * "what: why" in err. Any other status: refused(a, what, ctx, ...)'s. The answer (secrets)
 * is wiped before it is freed. */
int d9_creds_fetch(const d9_creds_http *r, const char *what, d9_creds_parse_fn parse, d9_creds_refused_fn refused,
                   void *ctx, d9_s3_credentials *c, char *err, size_t errlen);

/* "http"/"https" URL check: 0 and the host (without port or brackets) in host, or -1. */
int d9_creds_url_host(const char *url, char *scheme, size_t slen, char *host, size_t hlen);

#endif
