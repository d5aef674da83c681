/* What an S3 endpoint answers, on arbitrary bytes: a ListObjectsV2 page (src/fleet/s3_list.c,
 * every `s3://` reader and `serve --bucket` lists through it) and an error answer's <Code> and
 * <Message> (src/aws/s3_client.c, d9_s3_xml_next); and the endpoint URLs the client and the
 * credential services are given. Never reads past the answer (ASan) nor overflows (UBSan);
 * every key handed on is whole (non-empty, NUL-terminated, not cut at its buffer's size), a
 * truncated page names the next one or is an error, every refusal says why, and what is read
 * out of a tag always fits its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aws/creds_http.h"
#include "aws/s3_client.h"
#include "fleet/s3_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_key(void *ctx, const char *key, uint64_t size, const char *last_modified, char *err, size_t errlen) {
    (void)size;
    size_t n = strlen(key);
    if (n == 0 || n >= 2047 || strlen(last_modified) >= 64) abort();
    size_t *count = ctx;
    (*count)++;
    return 0;
}

/* tag's text into a buffer of len bytes: terminated inside it, and *from moved forward. */
static void xml_tag(const char *body, const char *tag, size_t len) {
    char *out = malloc(len ? len : 1); /* its exact size: a write past it is an ASan error */
    if (!out) return;
    const char *p = body;
    if (d9_s3_xml_next(&p, tag, out, len)) {
        if (len && !memchr(out, 0, len)) abort();
        if (p <= body || p > body + strlen(body)) abort();
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *body = malloc(size + 1); /* an answer is kept NUL-terminated (s3_client.c) */
    if (!body) return 0;
    memcpy(body, data, size);
    body[size] = 0;

    size_t count = 0;
    char token[2048], err[512] = "";
    memset(token, 'x', sizeof token);
    if (d9_s3_list_page(body, on_key, &count, token, sizeof token, err, sizeof err) == 0) {
        if (!memchr(token, 0, sizeof token) || strlen(token) + 1 >= sizeof token) abort();
    } else if (!err[0]) {
        abort(); /* a refusal says why */
    }

    static const size_t sizes[] = {0, 1, 2, 128, 512};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        xml_tag(body, "Code", sizes[i]);
        xml_tag(body, "Message", sizes[i]);
    }

    /* the same bytes as an endpoint URL: accepted ones have a host that fits */
    char why[200] = "", scheme[8], host[256];
    if (!d9_s3_endpoint_check(body, why, sizeof why) && !why[0]) abort();
    if (d9_creds_url_host(body, scheme, sizeof scheme, host, sizeof host) == 0 && (!host[0] || !scheme[0]))
        abort();
    free(body);
    return 0;
}
