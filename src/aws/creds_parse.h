/* The answers of the AWS credential services, decoded (outside input: bounded, fuzzed in
 * tests/fuzz/fuzz_creds_parse.c):
 *  - the JSON of the container endpoint and of EC2 IMDS: {"AccessKeyId", "SecretAccessKey",
 *    "Token", "Expiration", and IMDS's "Code"}, other members skipped;
 *  - the XML of STS AssumeRoleWithWebIdentity: <Credentials> with <AccessKeyId>,
 *    <SecretAccessKey>, <SessionToken>, <Expiration>, or an <Error> with <Code>/<Message>;
 *  - their ISO 8601 timestamps ("2026-12-01T16:00:00Z", fractions and +hh:mm offsets too). */
#ifndef D9_AWS_CREDS_PARSE_H
#define D9_AWS_CREDS_PARSE_H

#include <stddef.h>
#include <time.h>

#include "aws/s3_credentials.h"

/* 0 and *out (seconds since the epoch), or -1. */
int d9_creds_parse_time(const char *s, time_t *out);

/* The string member `key` of a JSON object (escapes decoded), or -1 when the text is no JSON
 * object or has no such string member. Nested values are skipped. */
int d9_creds_json_string(const char *body, size_t len, const char *key, char *out, size_t outlen);

/* 0: c->access_key, secret_key, session_token (maybe ""), expiration (0 when none) filled;
 * -1 with a message (never quoting a secret). */
int d9_creds_parse_json(const char *body, size_t len, d9_s3_credentials *c, char *err, size_t errlen);
int d9_creds_parse_sts(const char *body, size_t len, d9_s3_credentials *c, char *err, size_t errlen);

#endif
