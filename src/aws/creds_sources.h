/* The credential chain's network sources (s3_credentials.c calls them in this order, under its
 * lock). Each returns D9_CREDS_OK with *c filled (source set, expiration 0 when none),
 * D9_CREDS_ABSENT when it is not configured or not there (`err` says why, for the message that
 * lists every place looked at), or D9_CREDS_FATAL / D9_CREDS_RETRY with `err`. */
#ifndef D9_AWS_CREDS_SOURCES_H
#define D9_AWS_CREDS_SOURCES_H

#include <stddef.h>

#include "aws/s3_credentials.h"

enum { D9_CREDS_ABSENT = 2 };

/* 1 when the environment configures the source, with `key` naming that configuration (the
 * cache's key: never a secret); 0 with `note` saying what is not set. */
int d9_creds_web_identity_config(const char *region, char *key, size_t klen, char *note, size_t nlen);
int d9_creds_container_config(char *key, size_t klen, char *note, size_t nlen);
int d9_creds_imds_config(char *key, size_t klen, char *note, size_t nlen);

/* Fetches from the source (its config() returned 1). */
int d9_creds_web_identity(const char *region, d9_s3_credentials *c, char *err, size_t errlen);
int d9_creds_container(d9_s3_credentials *c, char *err, size_t errlen);
int d9_creds_imds(d9_s3_credentials *c, char *err, size_t errlen);

/* A token file's text, surrounding whitespace trimmed. 0, or -1 with err. */
int d9_creds_read_token_file(const char *path, char *out, size_t len, char *err, size_t errlen);

#endif
