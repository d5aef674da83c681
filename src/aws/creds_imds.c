/* EC2 instance metadata, IMDSv2 only: PUT /latest/api/token (with its TTL header) gives a
 * session token that every GET carries; /latest/meta-data/iam/security-credentials/ names the
 * instance's role and /.../ROLE gives its credentials as JSON. Endpoint
 * AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254 (http://[fd00:ec2::254] with
 * AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6); AWS_EC2_METADATA_DISABLED=true turns it off.
 * Timeouts are short (1 s to connect) so a host that is no EC2 instance is not held up, and an
 * absent service is remembered for ABSENT_SECS so that every upload does not ask again. State is
 * process-wide: called under the chain's lock (s3_credentials.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aws/creds_http.h"
#include "aws/creds_parse.h"
#include "aws/creds_sources.h"

#define ABSENT_SECS 300
#define TOKEN_TTL "21600"

static time_t absent_until;
static char absent_endpoint[512], absent_reason[1400];

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static void endpoint(char *out, size_t len) {
    const char *e = env("AWS_EC2_METADATA_SERVICE_ENDPOINT"), *mode = env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    if (!e) e = mode && strcasecmp(mode, "IPv6") == 0 ? "http://[fd00:ec2::254]" : "http://169.254.169.254";
    snprintf(out, len, "%s", e);
    size_t n = strlen(out);
    while (n && out[n - 1] == '/') out[--n] = 0;
}

int d9_creds_imds_config(char *key, size_t klen, char *note, size_t nlen) {
    const char *off = env("AWS_EC2_METADATA_DISABLED");
    if (off && strcasecmp(off, "true") == 0) {
        snprintf(note, nlen, "EC2 instance metadata disabled (AWS_EC2_METADATA_DISABLED=true)");
        return 0;
    }
    char ep[512];
    endpoint(ep, sizeof ep);
    snprintf(key, klen, "imds %s", ep);
    return 1;
}

static int get(const char *url, const char *token_header, d9_creds_answer *a, char *why, size_t wlen) {
    d9_creds_http req = {.method = "GET", .url = url, .headers = {token_header},
                         .connect_timeout_ms = 1000, .timeout_ms = 2000};
    return d9_creds_http_request(&req, a, why, wlen);
}

/* The role's credentials refused: the message names the URL, not the role again. */
typedef struct refusal {
    const char *what, *url;
} refusal;

static int refused(const d9_creds_answer *a, const char *what_role, void *ctx, char *err, size_t errlen) {
    const refusal *r = ctx;
    snprintf(err, errlen, "%s: HTTP %ld for %s", r->what, a->status, r->url);
    return D9_CREDS_RETRY;
}

int d9_creds_imds(d9_s3_credentials *c, char *err, size_t errlen) {
    char ep[512], url[1200], why[512], what[600];
    endpoint(ep, sizeof ep);
    snprintf(what, sizeof what, "EC2 instance metadata (IMDSv2) at %s", ep);
    time_t now = time(NULL);
    if (now < absent_until && strcmp(absent_endpoint, ep) == 0) {
        snprintf(err, errlen, "%s", absent_reason);
        return D9_CREDS_ABSENT;
    }
    d9_creds_answer *a = malloc(sizeof *a);
    if (!a) {
        snprintf(err, errlen, "%s: out of memory", what);
        return D9_CREDS_RETRY;
    }
    int rc = D9_CREDS_RETRY;
    char token_header[1200] = "", role[256];
    snprintf(url, sizeof url, "%s/latest/api/token", ep);
    d9_creds_http put = {.method = "PUT", .url = url, .headers = {"X-aws-ec2-metadata-token-ttl-seconds: " TOKEN_TTL},
                         .connect_timeout_ms = 1000, .timeout_ms = 2000};
    if (d9_creds_http_request(&put, a, why, sizeof why) != 0 || a->status == 403 || a->status == 404) {
        /* no metadata service here (or IMDSv2 refused): absent, not asked again for a while */
        char reason[520];
        if (a->status) snprintf(reason, sizeof reason, "HTTP %ld to the token request", a->status);
        else snprintf(reason, sizeof reason, "%s", why);
        snprintf(absent_reason, sizeof absent_reason, "no %s (%s; not asked again for %d s)", what, reason,
                 ABSENT_SECS);
        snprintf(absent_endpoint, sizeof absent_endpoint, "%s", ep);
        absent_until = now + ABSENT_SECS;
        snprintf(err, errlen, "%s", absent_reason);
        rc = D9_CREDS_ABSENT;
        goto out;
    }
    if (a->status != 200 || a->len == 0 || a->len > 1000 || strpbrk(a->body, "\r\n")) {
        snprintf(err, errlen, "%s: the token request got HTTP %ld%s", what, a->status,
                 a->status == 200 ? " with no usable token" : "");
        goto out;
    }
    snprintf(token_header, sizeof token_header, "X-aws-ec2-metadata-token: %.1000s", a->body);
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", ep);
    if (get(url, token_header, a, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", what, why);
        goto out;
    }
    if (a->status == 404) {
        snprintf(err, errlen, "%s: no IAM role attached to this instance (HTTP 404 for %s)", what, url);
        rc = D9_CREDS_ABSENT;
        goto out;
    }
    size_t rl = strcspn(a->body, "\r\n");
    if (a->status != 200 || rl == 0 || rl >= sizeof role || strcspn(a->body, "/?#%") < rl) {
        snprintf(err, errlen, "%s: HTTP %ld for %s%s", what, a->status, url,
                 a->status == 401 ? " (the session token was refused)" : "");
        goto out;
    }
    snprintf(role, sizeof role, "%.*s", (int)rl, a->body);
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", ep, role);
    char what_role[900];
    snprintf(what_role, sizeof what_role, "%s, role %s", what, role);
    d9_creds_http req = {.method = "GET", .url = url, .headers = {token_header},
                         .connect_timeout_ms = 1000, .timeout_ms = 2000};
    refusal r = {what, url};
    rc = d9_creds_fetch(&req, what_role, d9_creds_parse_json, refused, &r, c, err, errlen);
    if (rc == D9_CREDS_OK) absent_until = 0;
out:
    memset(a, 0, sizeof *a);
    free(a);
    memset(token_header, 0, sizeof token_header);
    return rc;
}
