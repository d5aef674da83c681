/* The credential services' answers (src/aws/creds_parse.c) on arbitrary bytes: the JSON of
 * the container endpoint and IMDS, STS's XML, and the expiration timestamps. Never reads past
 * the answer (ASan: the bytes are copied without a terminator), nor overflows (UBSan); what it
 * accepts is whole: a key and a secret that are NUL-terminated inside their buffers, and a
 * timestamp that reads back the same in its canonical form. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aws/creds_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_creds(const d9_s3_credentials *c) {
    if (!memchr(c->access_key, 0, sizeof c->access_key) || !memchr(c->secret_key, 0, sizeof c->secret_key) ||
        !memchr(c->session_token, 0, sizeof c->session_token))
        abort();
    if (!c->access_key[0] || !c->secret_key[0]) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *exact = malloc(size ? size : 1); /* no NUL: a read past the end is an ASan error */
    if (!exact) return 0;
    memcpy(exact, data, size);
    char err[512];
    d9_s3_credentials *c = malloc(sizeof *c);
    if (!c) {
        free(exact);
        return 0;
    }
    memset(c, 0, sizeof *c);
    err[0] = 0;
    if (d9_creds_parse_json(exact, size, c, err, sizeof err) == 0) check_creds(c);
    else if (!err[0]) abort(); /* a refusal says why */
    memset(c, 0, sizeof *c);
    err[0] = 0;
    if (d9_creds_parse_sts(exact, size, c, err, sizeof err) == 0) check_creds(c);
    else if (!err[0]) abort();
    free(c);
    free(exact);

    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    time_t t;
    if (d9_creds_parse_time(s, &t) == 0) {
        struct tm tm;
        char canon[32];
        time_t u;
        if (!gmtime_r(&t, &tm) || !strftime(canon, sizeof canon, "%Y-%m-%dT%H:%M:%SZ", &tm) ||
            d9_creds_parse_time(canon, &u) != 0 || u != t)
            abort();
    }
    free(s);
    return 0;
}
