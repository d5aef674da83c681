/* Web identity credentials (EKS IRSA, GitHub OIDC...): the token in AWS_WEB_IDENTITY_TOKEN_FILE
 * (read again at each fetch: it is rotated) exchanged for the role AWS_ROLE_ARN's temporary
 * credentials by STS AssumeRoleWithWebIdentity — an unsigned POST, the token being the proof.
 * Endpoint: AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else https://sts.REGION.amazonaws.com. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aws/creds_http.h"
#include "aws/creds_parse.h"
#include "aws/creds_sources.h"
#include "aws/s3_client.h"
#include "aws/sigv4.h"

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static const char *region_of(const char *region) {
    if (region && *region) return region;
    const char *r = env("AWS_REGION");
    if (!r) r = env("AWS_DEFAULT_REGION");
    return r ? r : "us-east-1";
}

static void endpoint(const char *region, char *out, size_t len) {
    const char *e = env("AWS_ENDPOINT_URL_STS");
    if (!e) e = env("AWS_ENDPOINT_URL");
    if (e) snprintf(out, len, "%s", e);
    else snprintf(out, len, "https://sts.%s.amazonaws.com", region_of(region));
}

int d9_creds_web_identity_config(const char *region, char *key, size_t klen, char *note, size_t nlen) {
    const char *file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *role = env("AWS_ROLE_ARN");
    if (!file || !role) {
        snprintf(note, nlen, "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set");
        return 0;
    }
    char ep[1024];
    endpoint(region, ep, sizeof ep);
    const char *session = env("AWS_ROLE_SESSION_NAME");
    snprintf(key, klen, "web identity %s %s %s %s", role, file, ep, session ? session : "");
    return 1;
}

static int classify(long status, const char *code) {
    if (status >= 500 || status == 429 || status == 408 || strcmp(code, "Throttling") == 0 ||
        strcmp(code, "IDPCommunicationError") == 0 || strcmp(code, "ExpiredTokenException") == 0)
        return D9_CREDS_RETRY; /* the identity provider, or a token file about to be rewritten */
    return D9_CREDS_FATAL;
}

/* STS's <Error>: its message in err, its code deciding whether to try again. */
static int refused(const d9_creds_answer *a, const char *what, void *ctx, char *err, size_t errlen) {
    char code[128] = "", why[512];
    const char *p = a->body;
    d9_s3_credentials scratch;
    d9_creds_parse_sts(a->body, a->len, &scratch, why, sizeof why); /* the <Error>'s code and message */
    memset(&scratch, 0, sizeof scratch);
    d9_s3_xml_next(&p, "Code", code, sizeof code);
    snprintf(err, errlen, "%s: HTTP %ld %s", what, a->status, why);
    return classify(a->status, code);
}

int d9_creds_web_identity(const char *region, d9_s3_credentials *c, char *err, size_t errlen) {
    const char *file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *role = env("AWS_ROLE_ARN");
    char ep[1024], what[1400];
    endpoint(region, ep, sizeof ep);
    snprintf(what, sizeof what, "web identity (role %.300s, token from %.300s) through STS %.600s", role, file, ep);
    char scheme[8], host[256];
    if (d9_creds_url_host(ep, scheme, sizeof scheme, host, sizeof host) != 0) {
        snprintf(err, errlen, "%s: the STS endpoint is not an http(s)://HOST[:PORT] URL (%s)", what,
                 env("AWS_ENDPOINT_URL_STS")  ? "AWS_ENDPOINT_URL_STS"
                 : env("AWS_ENDPOINT_URL") ? "AWS_ENDPOINT_URL"
                                           : "made from the region: AWS_REGION or AWS_DEFAULT_REGION");
        return D9_CREDS_FATAL;
    }
    char *token = malloc(16384), *body = malloc(3 * 16384 + 4096), *enc = malloc(3 * 16384 + 1);
    char session[128], session_enc[400], role_enc[2048], why[512];
    int rc = D9_CREDS_FATAL;
    if (!token || !body || !enc) {
        snprintf(err, errlen, "%s: out of memory", what);
        goto out;
    }
    if (d9_creds_read_token_file(file, token, 16384, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", what, why);
        rc = D9_CREDS_RETRY; /* the file may be being written (it is rotated) */
        goto out;
    }
    const char *s = env("AWS_ROLE_SESSION_NAME");
    if (s) snprintf(session, sizeof session, "%s", s);
    else snprintf(session, sizeof session, "dial9-%lld", (long long)time(NULL));
    if (d9_uri_encode(token, false, enc, 3 * 16384 + 1) != 0 || d9_uri_encode(role, false, role_enc, sizeof role_enc) != 0 ||
        d9_uri_encode(session, false, session_enc, sizeof session_enc) != 0) {
        snprintf(err, errlen, "%s: the role ARN, session name or token is too long", what);
        goto out;
    }
    snprintf(body, 3 * 16384 + 4096,
             "Action=AssumeRoleWithWebIdentity&RoleArn=%s&RoleSessionName=%s&Version=2011-06-15&WebIdentityToken=%s",
             role_enc, session_enc, enc);
    char url[1100];
    snprintf(url, sizeof url, "%s%s", ep, ep[strlen(ep) - 1] == '/' ? "" : "/");
    d9_creds_http req = {.method = "POST", .url = url,
                         .headers = {"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                                     "Accept: text/xml"},
                         .body = body, .connect_timeout_ms = 5000, .timeout_ms = 10000};
    rc = d9_creds_fetch(&req, what, d9_creds_parse_sts, refused, NULL, c, err, errlen);
out:
    if (token) memset(token, 0, 16384); /* the token and what carries it are secrets */
    if (body) memset(body, 0, 3 * 16384 + 4096);
    if (enc) memset(enc, 0, 3 * 16384 + 1);
    free(token);
    free(body);
    free(enc);
    return rc;
}
