/* AWS credentials, looked up as the AWS SDKs do, first found wins:
 *  1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *  2. the profile AWS_PROFILE (default "default") in the shared credentials file
 *     (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials), then in the config file
 *     (AWS_CONFIG_FILE, default ~/.aws/config; sections "[profile NAME]", or "[default]").
 * Not yet: web identity (STS), container credentials, EC2 IMDSv2 (docs/s3.md). Looked up at
 * each upload, so rewritten files and rotated variables are picked up without a restart. */
#ifndef D9_SINKS_S3_CREDENTIALS_H
#define D9_SINKS_S3_CREDENTIALS_H

#include <stddef.h>

typedef struct d9_s3_credentials {
    char access_key[128];
    char secret_key[128];
    char session_token[4096]; /* "" when none */
    char source[9000];        /* where they came from, for messages */
} d9_s3_credentials;

/* 0, or -1 with a message naming every place looked at. */
int d9_s3_credentials_load(d9_s3_credentials *c, char *err, size_t errlen);

#endif
