/* AWS credentials, looked up as the AWS SDKs do, first found wins:
 *  1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *  2. the profile AWS_PROFILE (default "default") in the shared credentials file
 *     (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials), then in the config file
 *     (AWS_CONFIG_FILE, default ~/.aws/config; sections "[profile NAME]", or "[default]");
 *  3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN through STS (creds_web_identity.c);
 *  4. container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI (creds_container.c);
 *  5. EC2 IMDSv2 unless AWS_EC2_METADATA_DISABLED=true (creds_imds.c).
 * 1 and 2 are read at each call, so rewritten files and rotated variables are picked up without a
 * restart. What 3-5 give is temporary: kept (process-wide, under a lock) until shortly before its
 * Expiration (d9_s3_credentials_refresh_at), then fetched again. Credentials are never logged. */
#ifndef D9_AWS_S3_CREDENTIALS_H
#define D9_AWS_S3_CREDENTIALS_H

#include <stddef.h>
#include <time.h>

typedef struct d9_s3_credentials {
    char access_key[128];
    char secret_key[128];
    char session_token[4096]; /* "" when none */
    time_t expiration;        /* 0: none (long-term keys) */
    char source[9000];        /* where they came from, for messages */
} d9_s3_credentials;

enum {
    D9_CREDS_FATAL = -1, /* none found, or a source refused: no request can work */
    D9_CREDS_OK = 0,
    D9_CREDS_RETRY = 1, /* a credential service is unreachable or failing for now: try later */
};

/* D9_CREDS_OK, or FATAL/RETRY with a message naming every place looked at. region: for the
 * regional STS endpoint (NULL: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1). */
int d9_s3_credentials_load(d9_s3_credentials *c, const char *region, char *err, size_t errlen);

/* Forget cached temporary credentials (S3 said ExpiredToken): the next load fetches new ones. */
void d9_s3_credentials_forget(void);

/* When credentials fetched at `fetched` and expiring at `expires` are fetched again: 5 minutes
 * before they expire, as the SDKs do, or after half their life when that is shorter. */
time_t d9_s3_credentials_refresh_at(time_t fetched, time_t expires);

#endif
